// Package operator deploys nmoverlay's handler and controller for the NMState CR: the
// objects of deploy/operand (the ones nmoverlay render writes: one definition), with the
// CR's placement and probe settings, server-side applied and owned by the CR, so that the
// garbage collector removes them with it. It also creates the default NMState on the
// platforms where nmoverlay is on by default (platform.go).
package operator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/rebootgate"
	"github.com/nmoverlay/nmoverlay/internal/serving"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// Labels every object the operator applies carries; its cache holds only those.
// VersionLabel names the release that applied it (version.Version): after an upgrade,
// `kubectl get -l app.kubernetes.io/managed-by=nmoverlay-operator -L app.kubernetes.io/version`
// shows what the new operator has applied.
const (
	ManagedByLabel = deploy.ManagedByLabel
	ManagedBy      = deploy.ManagedBy
	VersionLabel   = "app.kubernetes.io/version"
)

// FieldOwner is the operator's field manager for server-side apply.
const FieldOwner = "nmoverlay-operator"

// osSelector is the handler's node selector that the CR's adds to: the handler is a Linux
// binary whatever the CR says.
const osSelector = "kubernetes.io/os"

// Desired returns the operand objects (base, as deploy.Operand renders them) as the
// NMState nm wants them in env: the handler DaemonSet and the controller Deployment placed
// and configured by its spec, their metrics served as env says (monitoring.go), every object
// labelled as the operator's and owned by nm. base is not modified.
func Desired(base []*unstructured.Unstructured, nm *nmstatev1.NMState, env Environment) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	var handlers, controllers int
	for _, b := range append(slices.Clone(base), openShiftMonitoring(base, env)...) {
		if !wanted(b, env) {
			continue
		}
		o := b.DeepCopy()
		var err error
		switch o.GetKind() {
		case "DaemonSet":
			handlers++
			err = convert(o, &appsv1.DaemonSet{}, func(ds *appsv1.DaemonSet) error {
				if err := placeHandler(&ds.Spec.Template.Spec, nm.Spec); err != nil {
					return err
				}
				return serveMetrics(&ds.Spec.Template.Spec, "handler", env)
			})
		case "Deployment":
			controllers++
			err = convert(o, &appsv1.Deployment{}, func(d *appsv1.Deployment) error {
				if err := placeController(&d.Spec.Template.Spec, nm.Spec); err != nil {
					return err
				}
				return serveMetrics(&d.Spec.Template.Spec, "controller", env)
			})
		case "ServiceMonitor":
			if env.OpenShift {
				err = scrapeWithServiceCA(o, base)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[ManagedByLabel] = ManagedBy
		labels[VersionLabel] = version.Version
		o.SetLabels(labels)
		o.SetOwnerReferences([]metav1.OwnerReference{ownerOf(nm)})
		out = append(out, o)
	}
	if handlers != 1 || controllers != 1 {
		return nil, fmt.Errorf("the operand has %d DaemonSets and %d Deployments, want one of each (the handler, the controller)", handlers, controllers)
	}
	return out, nil
}

// convert edits o as the typed object T and writes it back, leaving out what the typed
// round trip adds (an empty status, a null creationTimestamp), which server-side apply
// would otherwise claim.
func convert[T any, P interface {
	*T
	runtime.Object
}](o *unstructured.Unstructured, typed P, edit func(P) error) error {
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, typed); err != nil {
		return err
	}
	if err := edit(typed); err != nil {
		return err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return err
	}
	delete(m, "status")
	unstructured.RemoveNestedField(m, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(m, "spec", "template", "metadata", "creationTimestamp")
	o.Object = m
	return nil
}

// placeHandler places the handler's pods and passes the CR's probe and log settings.
func placeHandler(pod *corev1.PodSpec, spec nmstatev1.NMStateSpec) error {
	for k, v := range spec.NodeSelector {
		if k == osSelector && v != pod.NodeSelector[osSelector] {
			return fmt.Errorf("spec.nodeSelector: %s=%s: the handler runs on Linux only", k, v)
		}
		if pod.NodeSelector == nil {
			pod.NodeSelector = map[string]string{}
		}
		pod.NodeSelector[k] = v
	}
	if len(spec.Tolerations) > 0 {
		// The default tolerates every taint; the CR's replace it, and the handler must still
		// run on a node its reboot gate holds: lifting it is its job.
		pod.Tolerations = withGateToleration(spec.Tolerations)
	}
	if spec.Affinity != nil {
		pod.Affinity = spec.Affinity
	}
	c, err := container(pod, "handler")
	if err != nil {
		return err
	}
	c.Args = append(c.Args, HandlerArgs(spec)...)
	if spec.Backend == nmstatev1.BackendNetplan {
		netplanHost(pod, c)
	}
	return nil
}

// HostRoot is where the handler sees the host's root with the netplan backend.
const HostRoot = "/host"

// netplanHost gives the handler what the netplan backend needs of the host: its root,
// read-only (netplan's own binary and the node's /etc/netplan), its /run writable
// (/run/netplan, and NetworkManager's runtime profiles netplan generates: nothing
// persistent), and chroot, to run netplan in the host's root.
func netplanHost(pod *corev1.PodSpec, c *corev1.Container) {
	dir := corev1.HostPathDirectory
	pod.Volumes = append(pod.Volumes,
		corev1.Volume{Name: "host-root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/", Type: &dir}}},
		corev1.Volume{Name: "host-run", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/run", Type: &dir}}})
	c.VolumeMounts = append(c.VolumeMounts,
		corev1.VolumeMount{Name: "host-root", MountPath: HostRoot, ReadOnly: true},
		corev1.VolumeMount{Name: "host-run", MountPath: HostRoot + "/run"})
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	c.SecurityContext.Capabilities.Add = append(c.SecurityContext.Capabilities.Add, "SYS_CHROOT")
}

// placeController places the controller's pods and passes the log level.
func placeController(pod *corev1.PodSpec, spec nmstatev1.NMStateSpec) error {
	if len(spec.InfraNodeSelector) > 0 {
		pod.NodeSelector = spec.InfraNodeSelector
	}
	if len(spec.InfraTolerations) > 0 {
		// The gate's toleration stays (the manifest's): the controller lifts gates, and
		// must not wait for one to be scheduled.
		pod.Tolerations = withGateToleration(spec.InfraTolerations)
	}
	if spec.InfraAffinity != nil {
		pod.Affinity = spec.InfraAffinity
	}
	c, err := container(pod, "controller")
	if err != nil {
		return err
	}
	c.Args = append(c.Args, gateArgs(spec)...)
	c.Args = append(c.Args, logArgs(spec)...)
	return nil
}

// withGateToleration is tolerations, with the reboot gate's taint's added unless they
// tolerate it already; a copy.
func withGateToleration(tolerations []corev1.Toleration) []corev1.Toleration {
	out := slices.Clone(tolerations)
	if !rebootgate.Tolerated(out) {
		out = append(out, rebootgate.Toleration())
	}
	return out
}

// gateArgs are the controller's and the handler's flags for spec.rebootGate; none while it
// is off (the operator clears what a gate left).
func gateArgs(spec nmstatev1.NMStateSpec) []string {
	if spec.RebootGate != nmstatev1.RebootGateTaint {
		return nil
	}
	return []string{"--reboot-gate=" + spec.RebootGate}
}

func container(pod *corev1.PodSpec, name string) (*corev1.Container, error) {
	i := slices.IndexFunc(pod.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		return nil, fmt.Errorf("no container %q", name)
	}
	return &pod.Containers[i], nil
}

// HandlerArgs are the handler's flags for the CR's probe and log settings, in a stable
// order (a change of order would roll the DaemonSet).
func HandlerArgs(spec nmstatev1.NMStateSpec) []string {
	var args []string
	if spec.Backend == nmstatev1.BackendNetplan {
		args = append(args, "--backend="+spec.Backend, "--host-root="+HostRoot)
	}
	p := spec.ProbeConfiguration
	if p.DNS.Host != "" {
		args = append(args, "--dns-probe-host="+p.DNS.Host)
	}
	if p.Timeout != nil {
		args = append(args, "--probe-timeout="+p.Timeout.Duration.String())
	}
	if len(p.Disabled) > 0 {
		names := make([]string, len(p.Disabled))
		for i, d := range p.Disabled {
			names[i] = string(d)
		}
		slices.Sort(names)
		args = append(args, "--disable-probes="+strings.Join(slices.Compact(names), ","))
	}
	if spec.MigrateFrom != "" {
		args = append(args, "--migration-plan="+paths.MigrationPlan)
	}
	args = append(args, gateArgs(spec)...)
	return append(args, logArgs(spec)...)
}

// logArgs are the daemons' log flags for the NMState's logLevel: debug raises the one
// verbosity of their logs and client-go's (serving.Logging); error keeps errors alone.
func logArgs(spec nmstatev1.NMStateSpec) []string {
	switch spec.LogLevel {
	case "debug":
		return []string{"--v=" + strconv.Itoa(serving.DebugVerbosity)}
	case "error":
		return []string{"--zap-log-level=error"}
	}
	return nil
}

// ownerOf is the reference that makes nm the controller of an object: the garbage
// collector deletes the object when nm goes, and waits for it if nm is deleted in the
// foreground.
func ownerOf(nm *nmstatev1.NMState) metav1.OwnerReference {
	return *metav1.NewControllerRef(nm, nmstatev1.GroupVersion.WithKind("NMState"))
}
