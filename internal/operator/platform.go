package operator

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
)

// Default modes (the operator's --default-nmstate).
const (
	// DefaultOnPlatform creates the default NMState on the platforms listed in
	// DefaultPlatforms, once.
	DefaultOnPlatform = "platform"
	// DefaultNever never creates it: the opt-out.
	DefaultNever = "never"
)

// DefaultPlatforms are the OpenShift platforms (Infrastructure status.platformStatus.type)
// where nmoverlay is on by default: where secondary NICs are configured on the hosts
// themselves. Elsewhere (cloud platforms, None, plain Kubernetes) it is opt-in.
var DefaultPlatforms = []string{"BareMetal"}

// InfrastructureGVK is OpenShift's cluster-wide platform description; the one object is
// named cluster.
var InfrastructureGVK = schema.GroupVersionKind{Group: "config.openshift.io", Version: "v1", Kind: "Infrastructure"}

// RecordConfigMap, in the operator's namespace, records that the operator created the
// default NMState (key RecordKey: when). Deleting that NMState is then the opt-out: it is
// not created again.
const (
	RecordConfigMap = "nmoverlay-operator"
	RecordKey       = "default-nmstate-created"
)

// defaultInput is what deciding on the default NMState needs.
type defaultInput struct {
	mode      string
	platforms []string
	// served: the Infrastructure API exists (OpenShift); platform is its type, "" while
	// the installer has not set it.
	served   bool
	platform string
	exists   bool // an NMState named nmstate exists
	recorded bool // the operator created it before
}

type defaultDecision struct {
	create, record bool
	why            string
}

// decideDefault says whether to create the default NMState, and whether to record that
// it exists now (so that deleting it later is taken as an opt-out, whoever created it).
func decideDefault(in defaultInput) defaultDecision {
	switch {
	case in.mode == DefaultNever:
		return defaultDecision{why: "opted out (--default-nmstate=never): create the NMState to enable nmoverlay"}
	case !in.served:
		return defaultDecision{why: "no OpenShift Infrastructure API: nmoverlay is opt-in, create the NMState to enable it"}
	case in.platform == "":
		return defaultDecision{why: "the Infrastructure's platform is not set yet"}
	case !slices.Contains(in.platforms, in.platform):
		return defaultDecision{why: fmt.Sprintf("platform %s: nmoverlay is opt-in, create the NMState to enable it", in.platform)}
	case in.exists:
		return defaultDecision{record: !in.recorded, why: "the NMState exists"}
	case in.recorded:
		return defaultDecision{why: "the default NMState was deleted after it was created: that is the opt-out, it is not created again"}
	}
	return defaultDecision{create: true, record: true, why: fmt.Sprintf("platform %s: nmoverlay is on by default", in.platform)}
}

// Defaulter creates the default NMState where the platform calls for it.
type Defaulter struct {
	// Client reads the Infrastructure (cached) and writes; Reader reads the NMState and
	// the record (uncached: one read each per pass).
	Client    client.Client
	Reader    client.Reader
	Namespace string
	Mode      string
	Platforms []string
	// Served: the Infrastructure API exists (looked up once at start).
	Served bool
}

var defaultRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: nmstatev1.NMStateName}}

// SetupWithManager decides once at start and again whenever the Infrastructure changes.
func (d *Defaulter) SetupWithManager(mgr ctrl.Manager) error {
	start := make(chan event.GenericEvent, 1)
	start <- event.GenericEvent{Object: &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName}}}
	always := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{defaultRequest}
	})
	b := ctrl.NewControllerManagedBy(mgr).Named("default-nmstate").WatchesRawSource(source.Channel(start, always))
	if d.Served {
		infra := &unstructured.Unstructured{}
		infra.SetGroupVersionKind(InfrastructureGVK)
		b = b.Watches(infra, always)
	}
	return b.Complete(d)
}

// Reconcile creates the default NMState and the record, as decideDefault says.
func (d *Defaulter) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	in := defaultInput{mode: d.Mode, platforms: d.Platforms, served: d.Served}
	if d.Served {
		infra := &unstructured.Unstructured{}
		infra.SetGroupVersionKind(InfrastructureGVK)
		err := d.Client.Get(ctx, client.ObjectKey{Name: "cluster"}, infra)
		if client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, err
		}
		in.platform, _, _ = unstructured.NestedString(infra.Object, "status", "platformStatus", "type")
		if in.platform == "" { // before OpenShift 4.2 only status.platform was set
			in.platform, _, _ = unstructured.NestedString(infra.Object, "status", "platform")
		}
	}
	err := d.Reader.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, &nmstatev1.NMState{})
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	in.exists = err == nil
	record := &corev1.ConfigMap{}
	err = d.Reader.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: RecordConfigMap}, record)
	if client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, err
	}
	in.recorded = err == nil && record.Data[RecordKey] != ""

	dec := decideDefault(in)
	if !dec.create && !dec.record {
		log.V(1).Info("no default NMState", "why", dec.why, "platform", in.platform)
		return reconcile.Result{}, nil
	}
	if dec.create {
		nm := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName,
			Labels: map[string]string{ManagedByLabel: ManagedBy}}}
		if err := d.Client.Create(ctx, nm); err != nil && !apierrors.IsAlreadyExists(err) {
			return reconcile.Result{}, err
		}
		log.Info("created the default NMState", "nmstate", nm.Name, "platform", in.platform, "why", dec.why)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: RecordConfigMap,
		Labels: map[string]string{ManagedByLabel: ManagedBy}},
		Data: map[string]string{RecordKey: time.Now().UTC().Format(time.RFC3339)}}
	if err := d.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// Served says whether the API server serves gvk (OpenShift's Infrastructure, APIServer).
func Served(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	_, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}
