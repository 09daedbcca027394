package adoption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
)

// FieldOwner is the field manager of what the move applies.
const FieldOwner = "nmoverlay-migrate"

// The backup of kubernetes-nmstate's objects: one ConfigMap in its namespace, which the
// move leaves in place, found again by its label when a run resumes.
const (
	BackupName  = "nmoverlay-migration"
	BackupLabel = "nmoverlay.io/migration"
	// backupNodesKey holds, once every node is on the overlay, each node's backup dir of
	// the profiles it moved (NodeBackups).
	backupNodesKey = "nodes.yaml"
)

// Takeover is the move of a running cluster from kubernetes-nmstate to nmoverlay, as
// steps (Steps).
type Takeover struct {
	Client client.Client
	// Objects are nmoverlay's, as `nmoverlay render` writes them: its CRDs, its cluster
	// side, and the MachineConfigs that put each pool's nodes on the overlay.
	Objects []*unstructured.Unstructured
}

// Kinds of kubernetes-nmstate's objects the move stops, besides Deployments and
// DaemonSets; a kind the cluster does not serve (no OLM, no OpenShift console) has none.
var (
	subscriptionKind  = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "Subscription"}
	csvObjectKind     = schema.GroupVersionKind{Group: "operators.coreos.com", Version: "v1alpha1", Kind: "ClusterServiceVersion"}
	mutatingKind      = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"}
	validatingKind    = schema.GroupVersionKind{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"}
	consolePluginKind = schema.GroupVersionKind{Group: "console.openshift.io", Version: "v1", Kind: "ConsolePlugin"}
	crdKind           = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	machineConfigKind = "MachineConfig"
	// olmCopiedLabel marks OLM's copies of a CSV in the namespaces it watches: they go
	// with the original.
	olmCopiedLabel = "olm.copiedFrom"
	// consolePluginName is what kubernetes-nmstate's operator names its console plugin.
	consolePluginName = "nmstate-console-plugin"
)

// role is what the move does to one of kubernetes-nmstate's objects.
type role int

const (
	roleNone     role = iota
	roleOLM           // deleted first, or OLM puts the rest back: Subscription, CSV
	roleOperator      // scaled to 0, kept: it would recreate its operands
	roleOperand       // deleted once the operator is stopped: handler, webhook and the rest
)

// roleOf says which of kubernetes-nmstate's objects o is, if any: the same rules as Read's.
func roleOf(o *unstructured.Unstructured) role {
	labels := o.GetLabels()
	switch o.GroupVersionKind() {
	case subscriptionKind:
		if name, _, _ := unstructured.NestedString(o.Object, "spec", "name"); name == operatorApp {
			return roleOLM
		}
	case csvObjectKind:
		if operatorCSVName(o.GetName()) && labels[olmCopiedLabel] == "" {
			return roleOLM
		}
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		return deploymentRole(o.GetName(), labels)
	case appsv1.SchemeGroupVersion.WithKind("DaemonSet"):
		podLabels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "template", "metadata", "labels")
		if operandDaemonSet(labels, podLabels) {
			return roleOperand
		}
	case mutatingKind, validatingKind:
		if labels[appLabel] == operandApp {
			return roleOperand
		}
	case consolePluginKind:
		if o.GetName() == consolePluginName {
			return roleOperand
		}
	}
	return roleNone
}

// kubernetesNMState lists kubernetes-nmstate's objects the move stops, each with its role.
func (t *Takeover) kubernetesNMState(ctx context.Context) (map[role][]*unstructured.Unstructured, error) {
	out := map[role][]*unstructured.Unstructured{}
	for _, gvk := range []schema.GroupVersionKind{subscriptionKind, csvObjectKind, appsv1.SchemeGroupVersion.WithKind("Deployment"),
		appsv1.SchemeGroupVersion.WithKind("DaemonSet"), mutatingKind, validatingKind, consolePluginKind} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := t.Client.List(ctx, l); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("listing %ss: %w", gvk.Kind, err)
		}
		for i := range l.Items {
			o := &l.Items[i]
			o.SetGroupVersionKind(gvk)
			if r := roleOf(o); r != roleNone {
				out[r] = append(out[r], o)
			}
		}
	}
	return out, nil
}

// Steps are the move, in order. Each waits until it holds:
//  1. kubernetes-nmstate's objects are backed up into a ConfigMap in its namespace;
//  2. OLM's Subscription and CSV of its operator are deleted (OLM would scale it back);
//  3. its operator is scaled to 0 and its pods are gone;
//  4. its operands (handler, webhook and its configuration, metrics, console plugin) are
//     deleted and their pods gone; its CRDs, NMState, policies, enactments and states stay;
//  5. nmoverlay's CRDs are applied over its own, serving every stored version;
//  6. the NMState says spec.migrateFrom, so that nmoverlay's first handlers plan;
//  7. nmoverlay's cluster side is applied, its operator Available, and the NMState
//     Available by nmoverlay's operator;
//  8. every node policies select has its handler's migration plan reported;
//  9. the MachineConfigs are applied (MCO then reboots each pool's nodes onto the overlay);
//  10. every such node runs on the overlay;
//  11. each node's backup dir is recorded beside the rest, and spec.migrateFrom removed.
//
// Once the last holds, the move is over (Run passes over every step then): spec.migrateFrom,
// set by the sixth, is gone by then.
func (t *Takeover) Steps(namespace string) []Step {
	return []Step{
		{Name: "back up kubernetes-nmstate's objects", Do: func(ctx context.Context) error { return t.backUp(ctx, namespace) },
			Waiting: t.backupWaiting},
		{Name: "stop OLM's install of kubernetes-nmstate", Do: t.deleteAll(roleOLM), Waiting: t.goneWaiting(roleOLM)},
		{Name: "stop kubernetes-nmstate's operator", Do: t.scaleOperator, Waiting: t.operatorWaiting},
		{Name: "stop kubernetes-nmstate's handler, webhook and other operands", Do: t.deleteAll(roleOperand), Waiting: t.operandsWaiting},
		{Name: "take over the nmstate.io CRDs", Do: t.applyCRDs, Waiting: t.crdsWaiting},
		{Name: "ask the NMState for the migration (spec.migrateFrom)", Do: t.setMigrateFrom(nmstatev1.MigrateFromKubernetesNMState),
			Waiting: t.migrateFromWaiting},
		{Name: "install nmoverlay", Do: t.applyClusterSide, Waiting: t.installWaiting},
		{Name: "every node's migration plan", Waiting: t.nodesWaiting(PlansWaiting)},
		{Name: "apply the MachineConfigs", Do: t.applyMachineConfigs, Waiting: t.machineConfigsWaiting},
		{Name: "every node on the overlay", Waiting: t.nodesWaiting(OverlayWaiting)},
		{Name: "record each node's backup and end the migration", Do: t.finish, Waiting: t.finishedWaiting},
	}
}

// FindBackup is the backup ConfigMap of a move under way or done, nil when none is.
func FindBackup(ctx context.Context, c client.Reader) (*corev1.ConfigMap, error) {
	l := &corev1.ConfigMapList{}
	if err := c.List(ctx, l, client.MatchingLabels{BackupLabel: nmstatev1.MigrateFromKubernetesNMState}); err != nil {
		return nil, fmt.Errorf("looking for the migration's backup: %w", err)
	}
	switch len(l.Items) {
	case 0:
		return nil, nil
	case 1:
		return &l.Items[0], nil
	}
	return nil, fmt.Errorf("%d ConfigMaps labelled %s: keep the one the move wrote first", len(l.Items), BackupLabel)
}

func (t *Takeover) backupWaiting(ctx context.Context) (string, error) {
	cm, err := FindBackup(ctx, t.Client)
	if err != nil || cm != nil {
		return "", err
	}
	return "no backup yet", nil
}

// backUp writes every object of kubernetes-nmstate's the move stops or replaces (the
// CRDs, the NMStates, OLM's objects, its operator and operands) into one ConfigMap, each
// as YAML without its status and server-set fields, in one write: there is a backup of
// everything or none.
func (t *Takeover) backUp(ctx context.Context, namespace string) error {
	found, err := t.kubernetesNMState(ctx)
	if err != nil {
		return err
	}
	objs := slices.Concat(found[roleOLM], found[roleOperator], found[roleOperand])
	for _, name := range CRDNames {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(crdKind)
		if err := t.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return fmt.Errorf("reading the CRD %s: %w", name, err)
		}
		objs = append(objs, crd)
	}
	nmstates := &unstructured.UnstructuredList{}
	nmstates.SetGroupVersionKind(nmstatev1.GroupVersion.WithKind("NMStateList"))
	if err := t.Client.List(ctx, nmstates); err != nil {
		return fmt.Errorf("listing NMStates: %w", err)
	}
	for i := range nmstates.Items {
		nmstates.Items[i].SetGroupVersionKind(nmstatev1.GroupVersion.WithKind("NMState"))
		objs = append(objs, &nmstates.Items[i])
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: BackupName, Namespace: namespace,
		Labels: map[string]string{BackupLabel: nmstatev1.MigrateFromKubernetesNMState}}, Data: map[string]string{}}
	for _, o := range objs {
		b, err := yaml.Marshal(backupCopy(o).Object)
		if err != nil {
			return err
		}
		cm.Data[BackupKey(o)] = string(b)
	}
	// The first free name: nmoverlay-migration, then -2, -3... after moves rolled back,
	// whose backups stay as records.
	for n := 1; n <= 100; n++ {
		cm.Name = BackupName
		if n > 1 {
			cm.Name = fmt.Sprintf("%s-%d", BackupName, n)
		}
		err := t.Client.Create(ctx, cm)
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("writing the backup %s/%s: %w", namespace, cm.Name, err)
		}
		taken := &corev1.ConfigMap{}
		if err := t.Client.Get(ctx, client.ObjectKeyFromObject(cm), taken); err != nil {
			return fmt.Errorf("reading %s/%s: %w", namespace, cm.Name, err)
		}
		if taken.Labels[BackupLabel] == nmstatev1.MigrateFromKubernetesNMState {
			return nil // this move's own, written by a run whose answer was lost
		}
	}
	return fmt.Errorf("no free name for the backup in %s: delete old %s-N records", namespace, BackupName)
}

// BackupKey is an object's key in the backup: kind, namespace and name, as a ConfigMap key
// may spell them.
func BackupKey(o client.Object) string {
	kind := o.GetObjectKind().GroupVersionKind().Kind
	if o.GetNamespace() == "" {
		return kind + "_" + o.GetName() + ".yaml"
	}
	return kind + "_" + o.GetNamespace() + "_" + o.GetName() + ".yaml"
}

// backupCopy is o as it can be created again: without status and what the server sets.
func backupCopy(o *unstructured.Unstructured) *unstructured.Unstructured {
	c := o.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	return c
}

// deleteAll deletes kubernetes-nmstate's objects of role r (OLM's Subscriptions before
// its CSVs, as they are listed).
func (t *Takeover) deleteAll(r role) func(context.Context) error {
	return func(ctx context.Context) error {
		found, err := t.kubernetesNMState(ctx)
		if err != nil {
			return err
		}
		for _, o := range found[r] {
			if err := t.Client.Delete(ctx, o, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
			}
		}
		return nil
	}
}

func (t *Takeover) goneWaiting(r role) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		found, err := t.kubernetesNMState(ctx)
		if err != nil {
			return "", err
		}
		return names("still there", found[r]), nil
	}
}

func names(what string, objs []*unstructured.Unstructured) string {
	if len(objs) == 0 {
		return ""
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.GetKind()+" "+client.ObjectKeyFromObject(o).String())
	}
	return what + ": " + strings.Join(out, ", ")
}

func (t *Takeover) scaleOperator(ctx context.Context) error {
	found, err := t.kubernetesNMState(ctx)
	if err != nil {
		return err
	}
	for _, o := range found[roleOperator] {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":0}}`))
		if err := t.Client.Patch(ctx, o, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("scaling %s to 0: %w", client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// operatorWaiting holds once every operator Deployment asks for no replica and runs none.
func (t *Takeover) operatorWaiting(ctx context.Context) (string, error) {
	found, err := t.kubernetesNMState(ctx)
	if err != nil {
		return "", err
	}
	var running []*unstructured.Unstructured
	for _, o := range found[roleOperator] {
		want, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		has, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
		if want > 0 || has > 0 {
			running = append(running, o)
		}
	}
	return names("still running", running), nil
}

// operandsWaiting holds once the operands are deleted and no pod of theirs runs (the
// handler's pods may end an apply first: NetworkManager's checkpoint then rolls back).
func (t *Takeover) operandsWaiting(ctx context.Context) (string, error) {
	if waiting, err := t.goneWaiting(roleOperand)(ctx); waiting != "" || err != nil {
		return waiting, err
	}
	pods := &corev1.PodList{}
	if err := t.Client.List(ctx, pods, client.MatchingLabels{appLabel: operandApp}); err != nil {
		return "", fmt.Errorf("listing kubernetes-nmstate's pods: %w", err)
	}
	var left []string
	for _, p := range pods.Items {
		left = append(left, p.Namespace+"/"+p.Name)
	}
	if len(left) > 0 {
		return "pods still there: " + strings.Join(left, ", "), nil
	}
	return "", nil
}

func (t *Takeover) ofKind(crds bool, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range t.Objects {
		isCRD := o.GroupVersionKind() == crdKind
		if isCRD == crds && (kind == "" || o.GetKind() == kind) {
			out = append(out, o)
		}
	}
	return out
}

func (t *Takeover) apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		if err := t.Client.Patch(ctx, o, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}

// TakenOverAnnotation marks the CRDs the move applied over kubernetes-nmstate's; the
// rollback puts back its CRDs as they were, without it.
const TakenOverAnnotation = "nmoverlay.io/taken-over-from"

// applyCRDs applies nmoverlay's CRDs over kubernetes-nmstate's, taking their fields over.
// Assess has checked that they serve every version objects are stored at.
func (t *Takeover) applyCRDs(ctx context.Context) error {
	var crds []*unstructured.Unstructured
	for _, o := range t.ofKind(true, "") {
		o = o.DeepCopy()
		annotations := o.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[TakenOverAnnotation] = nmstatev1.MigrateFromKubernetesNMState
		o.SetAnnotations(annotations)
		crds = append(crds, o)
	}
	return t.apply(ctx, crds)
}

// crdsWaiting holds once each of nmoverlay's CRDs is applied by the move and Established.
func (t *Takeover) crdsWaiting(ctx context.Context) (string, error) {
	var waiting []string
	for _, o := range t.ofKind(true, "") {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := t.Client.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd); err != nil {
			return "", fmt.Errorf("reading the CRD %s: %w", o.GetName(), err)
		}
		if crd.Annotations[TakenOverAnnotation] == "" {
			waiting = append(waiting, o.GetName()+" is kubernetes-nmstate's")
			continue
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		if !established {
			waiting = append(waiting, o.GetName()+" is not Established")
		}
	}
	return strings.Join(waiting, "; "), nil
}

// applyClusterSide applies nmoverlay's objects but its CRDs and MachineConfigs, in the
// order rendered (the namespace first).
func (t *Takeover) applyClusterSide(ctx context.Context) error {
	var objs []*unstructured.Unstructured
	for _, o := range t.ofKind(false, "") {
		if o.GetKind() != machineConfigKind {
			objs = append(objs, o)
		}
	}
	return t.apply(ctx, objs)
}

// installWaiting holds once every Deployment nmoverlay's cluster side has (its operator)
// is Available at its generation.
func (t *Takeover) installWaiting(ctx context.Context) (string, error) {
	var waiting []string
	for _, o := range t.ofKind(false, "Deployment") {
		d := &appsv1.Deployment{}
		switch err := t.Client.Get(ctx, client.ObjectKeyFromObject(o), d); {
		case apierrors.IsNotFound(err):
			waiting = append(waiting, "Deployment "+client.ObjectKeyFromObject(o).String()+" not applied")
			continue
		case err != nil:
			return "", err
		}
		if !deploymentAvailable(d) {
			waiting = append(waiting, "Deployment "+client.ObjectKeyFromObject(o).String()+" not Available")
		}
	}
	if len(waiting) == 0 {
		return t.nmstateWaiting(ctx)
	}
	return strings.Join(waiting, "; "), nil
}

func deploymentAvailable(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setMigrateFrom sets (or, given "", removes) the NMState's spec.migrateFrom.
func (t *Takeover) setMigrateFrom(from string) func(context.Context) error {
	return func(ctx context.Context) error {
		value := "null"
		if from != "" {
			value = `"` + from + `"`
		}
		nm := &nmstatev1.NMState{ObjectMeta: metav1.ObjectMeta{Name: nmstatev1.NMStateName}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"migrateFrom":`+value+`}}`))
		if err := t.Client.Patch(ctx, nm, patch); err != nil {
			return fmt.Errorf("setting the NMState's spec.migrateFrom: %w", err)
		}
		return nil
	}
}

func (t *Takeover) nmstate(ctx context.Context) (*nmstatev1.NMState, error) {
	nm := &nmstatev1.NMState{}
	if err := t.Client.Get(ctx, client.ObjectKey{Name: nmstatev1.NMStateName}, nm); err != nil {
		return nil, fmt.Errorf("reading the NMState: %w", err)
	}
	return nm, nil
}

func (t *Takeover) migrateFromWaiting(ctx context.Context) (string, error) {
	nm, err := t.nmstate(ctx)
	if err != nil {
		return "", err
	}
	if nm.Spec.MigrateFrom != nmstatev1.MigrateFromKubernetesNMState {
		return "spec.migrateFrom is not set", nil
	}
	return "", nil
}

// nmstateWaiting holds once nmoverlay's operator says the NMState Available at its
// generation (kubernetes-nmstate's conditions carry none).
func (t *Takeover) nmstateWaiting(ctx context.Context) (string, error) {
	nm, err := t.nmstate(ctx)
	if err != nil {
		return "", err
	}
	c := meta.FindStatusCondition(nm.Status.Conditions, nmstatev1.NMStateAvailable)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != nm.Generation {
		msg := "nmoverlay's operator has not made the NMState Available"
		if c != nil && c.Message != "" && c.ObservedGeneration == nm.Generation {
			msg += ": " + c.Message
		}
		return msg, nil
	}
	return "", nil
}

// nodesOfPolicies are the nodes with an enactment: those policies select.
func (t *Takeover) nodesOfPolicies(ctx context.Context) ([]string, map[string]*v1beta1.NodeNetworkState, error) {
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	states := &v1beta1.NodeNetworkStateList{}
	for _, l := range []client.ObjectList{enactments, states} {
		if err := t.Client.List(ctx, l); err != nil {
			return nil, nil, err
		}
	}
	var nodes []string
	for _, e := range enactments.Items {
		if n := e.Labels[shared.NodeLabel]; n != "" && !slices.Contains(nodes, n) {
			nodes = append(nodes, n)
		}
	}
	slices.Sort(nodes)
	byNode := map[string]*v1beta1.NodeNetworkState{}
	for i := range states.Items {
		byNode[states.Items[i].Name] = &states.Items[i]
	}
	return nodes, byNode, nil
}

// nodesWaiting is a step's wait on the nodes policies select: says, given them and their
// NodeNetworkStates, what it still waits for.
func (t *Takeover) nodesWaiting(says func([]string, map[string]*v1beta1.NodeNetworkState) string) func(context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		nodes, states, err := t.nodesOfPolicies(ctx)
		if err != nil {
			return "", err
		}
		return says(nodes, states), nil
	}
}

// PlansWaiting says which of nodes have no plan reported by nmoverlay's handler yet: a
// node not on the overlay reports one (status.overlay.migration, the profiles to move and
// to keep) once its handler has read its persistent profiles; a node already on the
// overlay needs none.
func PlansWaiting(nodes []string, states map[string]*v1beta1.NodeNetworkState) string {
	var waiting []string
	for _, n := range nodes {
		o := overlayOf(states[n])
		if o == nil || (o.Degraded != "" && o.Migration == nil) {
			waiting = append(waiting, n)
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	return "no plan reported by nmoverlay's handler on " + strings.Join(waiting, ", ")
}

func overlayOf(nns *v1beta1.NodeNetworkState) *v1beta1.OverlayStatus {
	if nns == nil {
		return nil
	}
	return nns.Status.Overlay
}

// applyMachineConfigs applies the MachineConfigs rendered, where MCO serves them. A
// cluster without MCO lays the files down on its nodes itself (nmoverlay machineconfigs
// lists them): the next step waits for that as for MCO's rollout.
func (t *Takeover) applyMachineConfigs(ctx context.Context) error {
	err := t.apply(ctx, t.ofKind(false, machineConfigKind))
	if meta.IsNoMatchError(err) {
		return nil
	}
	return err
}

// machineConfigsWaiting holds once every MachineConfig rendered is there, or the cluster
// has no MachineConfig API.
func (t *Takeover) machineConfigsWaiting(ctx context.Context) (string, error) {
	_, missing, err := t.machineConfigs(ctx)
	return names("not applied", missing), err
}

// machineConfigs splits the rendered MachineConfigs into those the cluster has and those it
// has not; none of either where it serves no MachineConfig API.
func (t *Takeover) machineConfigs(ctx context.Context) (present, missing []*unstructured.Unstructured, err error) {
	for _, o := range t.ofKind(false, machineConfigKind) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(o.GroupVersionKind())
		switch err := t.Client.Get(ctx, client.ObjectKeyFromObject(o), got); {
		case meta.IsNoMatchError(err):
			return nil, nil, nil
		case apierrors.IsNotFound(err):
			missing = append(missing, o)
		case err != nil:
			return nil, nil, err
		default:
			present = append(present, o)
		}
	}
	return present, missing, nil
}

// OverlayWaiting says which of nodes do not run on the overlay yet, with why, as their
// handlers report it.
func OverlayWaiting(nodes []string, states map[string]*v1beta1.NodeNetworkState) string {
	var waiting []string
	for _, n := range nodes {
		switch o := overlayOf(states[n]); {
		case o == nil:
			waiting = append(waiting, n+" (no overlay reported)")
		case o.Degraded != "":
			waiting = append(waiting, n+" ("+o.Degraded+")")
		}
	}
	if len(waiting) == 0 {
		return ""
	}
	return "not on the overlay yet (MCO reboots each pool's nodes onto it; without MCO, lay the MachineConfig's files down): " +
		strings.Join(waiting, "; ")
}

// NodeBackup is where a node keeps the profiles it moved.
type NodeBackup struct {
	Dir   string   `json:"dir"`
	Moved []string `json:"moved,omitempty"`
}

// finish records each node's backup dir in the backup ConfigMap (the handlers report it
// only while spec.migrateFrom is set), then removes spec.migrateFrom.
func (t *Takeover) finish(ctx context.Context) error {
	cm, err := FindBackup(ctx, t.Client)
	if err != nil {
		return err
	}
	if cm == nil {
		return errors.New("the backup ConfigMap is gone")
	}
	if _, ok := cm.Data[backupNodesKey]; !ok {
		nodes, states, err := t.nodesOfPolicies(ctx)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(NodeBackups(nodes, states))
		if err != nil {
			return err
		}
		cm.Data[backupNodesKey] = string(b)
		if err := t.Client.Update(ctx, cm); err != nil {
			return fmt.Errorf("recording the nodes' backups: %w", err)
		}
	}
	return t.setMigrateFrom("")(ctx)
}

// NodeBackups are the nodes' backups of the profiles they moved, as their handlers report
// them.
func NodeBackups(nodes []string, states map[string]*v1beta1.NodeNetworkState) map[string]NodeBackup {
	out := map[string]NodeBackup{}
	for _, n := range nodes {
		o := overlayOf(states[n])
		if o == nil || o.Migration == nil || o.Migration.Backup == "" {
			continue
		}
		b := NodeBackup{Dir: o.Migration.Backup}
		for _, p := range o.Migration.Moved {
			b.Moved = append(b.Moved, p.File)
		}
		out[n] = b
	}
	return out
}

func (t *Takeover) finishedWaiting(ctx context.Context) (string, error) {
	cm, err := FindBackup(ctx, t.Client)
	if err != nil {
		return "", err
	}
	if cm == nil || cm.Data[backupNodesKey] == "" {
		return "the nodes' backups are not recorded", nil
	}
	nm, err := t.nmstate(ctx)
	if err != nil {
		return "", err
	}
	if nm.Spec.MigrateFrom != "" {
		return "spec.migrateFrom is still set", nil
	}
	return "", nil
}
