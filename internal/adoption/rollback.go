package adoption

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

// RolledBack is the backup ConfigMap's label value once the rollback is done: kept as a
// record, and no longer a move under way.
const RolledBack = "rolled-back"

// restorePodPrefix names the pod that restores one node's profiles.
const restorePodPrefix = "nmoverlay-restore-"

// restoredKey holds, in the backup, the nodes whose profiles were restored, from which
// backup dir.
const restoredKey = "restored.yaml"

// RollbackSteps undo the move, from wherever it stopped, each waiting until it holds:
//  1. the MachineConfigs are deleted, and every node runs off the overlay (MCO reboots each
//     pool's nodes onto their persistent profiles);
//  2. on each node that moved profiles, a pod of nmoverlay's image restores them from the
//     node's backup (nm-overlay restore-profiles) and has NetworkManager reload them;
//  3. nmoverlay is removed: its operator, then its operands and the rest of its cluster
//     side, and spec.migrateFrom; the NMState, the policies and their objects stay;
//  4. kubernetes-nmstate's CRDs are put back as the backup has them;
//  5. kubernetes-nmstate starts again: OLM's Subscription is created again (OLM installs
//     its CSV), or its operator is scaled back; its handler runs on every node it selects;
//  6. the backup is labelled rolled-back, kept as a record.
func (t *Takeover) RollbackSteps(backup *corev1.ConfigMap) []Step {
	return []Step{
		{Name: "remove the MachineConfigs", Do: t.deleteMachineConfigs, Waiting: t.offOverlayWaiting},
		{Name: "restore each node's moved profiles", Do: t.startRestores, Waiting: t.restoresWaiting},
		{Name: "remove nmoverlay", Do: t.uninstall, Waiting: t.uninstallWaiting},
		{Name: "give the nmstate.io CRDs back to kubernetes-nmstate", Do: t.restoreCRDs, Waiting: t.restoredCRDsWaiting},
		{Name: "start kubernetes-nmstate again", Do: t.restartKubernetesNMState, Waiting: t.kubernetesNMStateWaiting},
		{Name: "end the rollback", Do: func(ctx context.Context) error { return t.markRolledBack(ctx, client.ObjectKeyFromObject(backup)) },
			Waiting: t.rolledBackWaiting},
	}
}

// backup is the move's backup ConfigMap, which every rollback step reads.
func (t *Takeover) backup(ctx context.Context) (*corev1.ConfigMap, error) {
	cm, err := FindBackup(ctx, t.Client)
	if err == nil && cm == nil {
		err = errors.New("no backup of kubernetes-nmstate's objects: no move to roll back")
	}
	return cm, err
}

// backedUp decodes the backup's objects whose key starts with kind.
func backedUp(cm *corev1.ConfigMap, kind string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, k := range slices.Sorted(maps.Keys(cm.Data)) {
		if !strings.HasPrefix(k, kind+"_") {
			continue
		}
		o := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(cm.Data[k]), &o.Object); err != nil {
			return nil, fmt.Errorf("the backup's %s: %w", k, err)
		}
		out = append(out, o)
	}
	return out, nil
}

func (t *Takeover) deleteMachineConfigs(ctx context.Context) error {
	for _, o := range t.ofKind(false, machineConfigKind) {
		err := t.Client.Delete(ctx, o.DeepCopy())
		if meta.IsNoMatchError(err) {
			return nil
		}
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting MachineConfig %s: %w", o.GetName(), err)
		}
	}
	return nil
}

// offOverlayWaiting holds once no rendered MachineConfig is left and every node of the
// policies runs off the overlay, as its handler reports (a node no nmoverlay handler ever
// reported on never was on it).
func (t *Takeover) offOverlayWaiting(ctx context.Context) (string, error) {
	if left, _, err := t.machineConfigs(ctx); len(left) > 0 || err != nil {
		return names("not deleted yet", left), err
	}
	return t.nodesWaiting(OffOverlayWaiting)(ctx)
}

// OffOverlayWaiting says which of nodes still run on the overlay, as their handlers report
// it (a node no nmoverlay handler reported on never was on it).
func OffOverlayWaiting(nodes []string, states map[string]*v1beta1.NodeNetworkState) string {
	var on []string
	for _, n := range nodes {
		if o := overlayOf(states[n]); o != nil && o.Degraded == "" {
			on = append(on, n)
		}
	}
	if len(on) == 0 {
		return ""
	}
	return "still on the overlay (MCO reboots each pool's nodes off it; without MCO, remove the MachineConfig's files and reboot): " +
		strings.Join(on, ", ")
}

// nodeBackups are the nodes' backup dirs: as recorded at the end of the move, and as the
// handlers report them while the migration is under way (the later wins).
func (t *Takeover) nodeBackups(ctx context.Context) (map[string]NodeBackup, error) {
	cm, err := t.backup(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]NodeBackup{}
	if b := cm.Data[backupNodesKey]; b != "" {
		if err := yaml.Unmarshal([]byte(b), &out); err != nil {
			return nil, fmt.Errorf("the backup's %s: %w", backupNodesKey, err)
		}
	}
	nodes, states, err := t.nodesOfPolicies(ctx)
	if err != nil {
		return nil, err
	}
	maps.Copy(out, NodeBackups(nodes, states))
	return out, nil
}

// image is nmoverlay's image, as the rendered operator runs it: nm-overlay is in it.
func (t *Takeover) image() (string, error) {
	for _, o := range t.ofKind(false, "Deployment") {
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if image, _, _ := unstructured.NestedString(c.(map[string]any), "image"); image != "" {
				return image, nil
			}
		}
	}
	return "", errors.New("no image in the rendered operator")
}

// namespace is nmoverlay's, as rendered.
func (t *Takeover) namespace() string {
	for _, o := range t.ofKind(false, "Namespace") {
		return o.GetName()
	}
	return "nmoverlay"
}

// RestorePod is the pod that puts node's moved profiles back from its backup dir, with
// nm-overlay from image: root on the host's keyfile dir and the backups, and on the system
// bus to have NetworkManager reload them. nm-overlay refuses while the overlay is still
// mounted on the dir; the pod then fails and is started again (OnFailure).
func RestorePod(namespace, node, image, backupDir string) *corev1.Pod {
	root, yes := int64(0), true
	hostDir := func(name, path string, t corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: restorePodPrefix + node, Namespace: namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "nmoverlay-restore", BackupLabel: nmstatev1.MigrateFromKubernetesNMState}},
		Spec: corev1.PodSpec{
			NodeName:      node,
			RestartPolicy: corev1.RestartPolicyOnFailure,
			Tolerations:   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "restore", Image: image,
				Command:                  []string{"/nm-overlay", "restore-profiles", "--from", backupDir},
				Env:                      []corev1.EnvVar{{Name: "DBUS_SYSTEM_BUS_ADDRESS", Value: "unix:path=/run/dbus/system_bus_socket"}},
				SecurityContext:          &corev1.SecurityContext{RunAsUser: &root, Privileged: &yes},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "keyfiles", MountPath: paths.NMDefaultKeyfile},
					{Name: "migrated", MountPath: paths.MigratedDir, ReadOnly: true},
					{Name: "dbus", MountPath: "/run/dbus/system_bus_socket"},
				},
			}},
			Volumes: []corev1.Volume{
				hostDir("keyfiles", paths.NMDefaultKeyfile, corev1.HostPathDirectory),
				hostDir("migrated", paths.MigratedDir, corev1.HostPathDirectory),
				hostDir("dbus", "/run/dbus/system_bus_socket", corev1.HostPathSocket),
			},
		},
	}
}

// startRestores starts a restore pod on each node with a backup that has none.
func (t *Takeover) startRestores(ctx context.Context) error {
	backups, err := t.nodeBackups(ctx)
	if err != nil {
		return err
	}
	image, err := t.image()
	if err != nil {
		return err
	}
	for _, node := range slices.Sorted(maps.Keys(backups)) {
		pod := RestorePod(t.namespace(), node, image, backups[node].Dir)
		if err := t.Client.Create(ctx, pod); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("starting the restore on %s: %w", node, err)
		}
	}
	return nil
}

// restoresWaiting holds once every node with a backup has its restore pod Succeeded, or
// the backup records that they had (the pods go with nmoverlay, in the next step).
func (t *Takeover) restoresWaiting(ctx context.Context) (string, error) {
	cm, err := t.backup(ctx)
	if err != nil {
		return "", err
	}
	if _, ok := cm.Data[restoredKey]; ok {
		return "", nil
	}
	backups, err := t.nodeBackups(ctx)
	if err != nil {
		return "", err
	}
	var waiting []string
	for _, node := range slices.Sorted(maps.Keys(backups)) {
		pod := &corev1.Pod{}
		switch err := t.Client.Get(ctx, client.ObjectKey{Namespace: t.namespace(), Name: restorePodPrefix + node}, pod); {
		case apierrors.IsNotFound(err):
			waiting = append(waiting, node+" (not started)")
		case err != nil:
			return "", err
		case pod.Status.Phase != corev1.PodSucceeded:
			waiting = append(waiting, node+" ("+restoreState(pod)+")")
		}
	}
	if len(waiting) == 0 {
		return "", nil
	}
	return "restoring on " + strings.Join(waiting, "; "), nil
}

// restoreState is a restore pod's phase, with what its last failed run said.
func restoreState(pod *corev1.Pod) string {
	state := string(pod.Status.Phase)
	for _, c := range pod.Status.ContainerStatuses {
		if term := c.LastTerminationState.Terminated; term != nil && term.ExitCode != 0 {
			state += fmt.Sprintf(", %d failed runs, the last said: %s", c.RestartCount, strings.TrimSpace(term.Message))
		}
	}
	return state
}

// uninstall removes spec.migrateFrom while nmoverlay's CRD still has it, then nmoverlay's
// operator (so that it puts nothing back), its operands (those labelled as its, by the
// names it gives them), the restore pods, and the rest of its cluster side, the namespace
// last. The CRDs, the NMState and the policies stay.
func (t *Takeover) uninstall(ctx context.Context) error {
	if err := t.recordRestores(ctx); err != nil {
		return err
	}
	if err := t.unsetMigrateFrom(ctx); err != nil {
		return err
	}
	var operator, rest []*unstructured.Unstructured
	for _, o := range t.ofKind(false, "") {
		switch {
		case o.GetKind() == machineConfigKind:
		case o.GetKind() == "Deployment":
			operator = append(operator, o)
		default:
			rest = append(rest, o)
		}
	}
	operand, err := deploy.Operand(deploy.Options{Namespace: t.namespace()})
	if err != nil {
		return err
	}
	for _, o := range operator {
		if err := t.deleteIfThere(ctx, o, false); err != nil {
			return err
		}
	}
	for _, o := range operand {
		if err := t.deleteIfThere(ctx, o, true); err != nil {
			return err
		}
	}
	pods := &corev1.PodList{}
	if err := t.Client.List(ctx, pods, client.InNamespace(t.namespace()), client.MatchingLabels{"app.kubernetes.io/name": "nmoverlay-restore"}); err != nil {
		return err
	}
	for i := range pods.Items {
		if err := client.IgnoreNotFound(t.Client.Delete(ctx, &pods.Items[i])); err != nil {
			return err
		}
	}
	slices.Reverse(rest) // the namespace, rendered first, goes last
	for _, o := range rest {
		if err := t.deleteIfThere(ctx, o, false); err != nil {
			return err
		}
	}
	return nil
}

// recordRestores writes into the backup which nodes had their profiles restored: the
// restore step held, and its pods are about to go.
func (t *Takeover) recordRestores(ctx context.Context) error {
	cm, err := t.backup(ctx)
	if err != nil {
		return err
	}
	if _, ok := cm.Data[restoredKey]; ok {
		return nil
	}
	backups, err := t.nodeBackups(ctx)
	if err != nil {
		return err
	}
	b, err := yaml.Marshal(backups)
	if err != nil {
		return err
	}
	cm.Data[restoredKey] = string(b)
	if err := t.Client.Update(ctx, cm); err != nil {
		return fmt.Errorf("recording the restores: %w", err)
	}
	return nil
}

// unsetMigrateFrom removes spec.migrateFrom, if the NMState's CRD still knows it.
func (t *Takeover) unsetMigrateFrom(ctx context.Context) error {
	nm, err := t.nmstate(ctx)
	if err != nil || nm.Spec.MigrateFrom == "" {
		return client.IgnoreNotFound(err)
	}
	return t.setMigrateFrom("")(ctx)
}

// deleteIfThere deletes o; with operand, only if the operator labelled it as its own.
func (t *Takeover) deleteIfThere(ctx context.Context, o *unstructured.Unstructured, operand bool) error {
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(o.GroupVersionKind())
	switch err := t.Client.Get(ctx, client.ObjectKeyFromObject(o), got); {
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		return nil
	case err != nil:
		return err
	}
	if operand && got.GetLabels()[deploy.ManagedByLabel] != deploy.ManagedBy {
		return nil // not the operator's: never ours to delete
	}
	if err := t.Client.Delete(ctx, got, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
	}
	return nil
}

// uninstallWaiting holds once nmoverlay's operator and handlers are gone, pods included.
func (t *Takeover) uninstallWaiting(ctx context.Context) (string, error) {
	var left []string
	for _, o := range t.ofKind(false, "Deployment") {
		if err := t.Client.Get(ctx, client.ObjectKeyFromObject(o), &appsv1.Deployment{}); err == nil {
			left = append(left, "Deployment "+client.ObjectKeyFromObject(o).String())
		} else if !apierrors.IsNotFound(err) {
			return "", err
		}
	}
	pods := &corev1.PodList{}
	if err := t.Client.List(ctx, pods, client.InNamespace(t.namespace())); err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		left = append(left, "pod "+p.Namespace+"/"+p.Name)
	}
	nm, err := t.nmstate(ctx)
	if err != nil {
		return "", err
	}
	if nm.Spec.MigrateFrom != "" {
		left = append(left, "the NMState's spec.migrateFrom")
	}
	if len(left) > 0 {
		return "still there: " + strings.Join(left, ", "), nil
	}
	return "", nil
}

// restoreCRDs puts kubernetes-nmstate's CRDs back as the backup has them: their spec,
// labels and annotations (without the move's mark) replace nmoverlay's.
func (t *Takeover) restoreCRDs(ctx context.Context) error {
	cm, err := t.backup(ctx)
	if err != nil {
		return err
	}
	saved, err := backedUp(cm, "CustomResourceDefinition")
	if err != nil {
		return err
	}
	for _, s := range saved {
		want := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtimeFromUnstructured(s, want); err != nil {
			return fmt.Errorf("the backup's CRD %s: %w", s.GetName(), err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := t.Client.Get(ctx, client.ObjectKey{Name: want.Name}, crd); err != nil {
			return fmt.Errorf("reading the CRD %s: %w", want.Name, err)
		}
		crd.Spec, crd.Labels, crd.Annotations = want.Spec, want.Labels, want.Annotations
		if err := t.Client.Update(ctx, crd); err != nil {
			return fmt.Errorf("putting the CRD %s back: %w", want.Name, err)
		}
	}
	return nil
}

func (t *Takeover) restoredCRDsWaiting(ctx context.Context) (string, error) {
	var waiting []string
	for _, name := range CRDNames {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := t.Client.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return "", fmt.Errorf("reading the CRD %s: %w", name, err)
		}
		if crd.Annotations[TakenOverAnnotation] != "" {
			waiting = append(waiting, name)
		}
	}
	if len(waiting) > 0 {
		return "still nmoverlay's: " + strings.Join(waiting, ", "), nil
	}
	return "", nil
}

// restartKubernetesNMState creates OLM's Subscriptions again, or scales its operator back
// to the replicas it had.
func (t *Takeover) restartKubernetesNMState(ctx context.Context) error {
	cm, err := t.backup(ctx)
	if err != nil {
		return err
	}
	subscriptions, err := backedUp(cm, subscriptionKind.Kind)
	if err != nil {
		return err
	}
	for _, s := range subscriptions {
		if err := t.Client.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the Subscription %s again: %w", client.ObjectKeyFromObject(s), err)
		}
	}
	if len(subscriptions) > 0 {
		return nil // OLM installs the operator: its Deployment went with the CSV
	}
	operators, err := backedUp(cm, "Deployment")
	if err != nil {
		return err
	}
	for _, o := range operators {
		if roleOf(o) != roleOperator {
			continue
		}
		replicas, found, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
		if !found {
			replicas = 1
		}
		patch := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, replicas))
		if err := t.Client.Patch(ctx, o, patch); err != nil {
			return fmt.Errorf("scaling %s back to %d: %w", client.ObjectKeyFromObject(o), replicas, err)
		}
	}
	return nil
}

// kubernetesNMStateWaiting holds once kubernetes-nmstate's handler DaemonSet is back and
// ready on every node it selects.
func (t *Takeover) kubernetesNMStateWaiting(ctx context.Context) (string, error) {
	found, err := t.kubernetesNMState(ctx)
	if err != nil {
		return "", err
	}
	for _, o := range found[roleOperand] {
		if o.GetKind() != "DaemonSet" {
			continue
		}
		ds := &appsv1.DaemonSet{}
		if err := runtimeFromUnstructured(o, ds); err != nil {
			return "", err
		}
		if ds.Status.DesiredNumberScheduled > 0 && ds.Status.NumberReady == ds.Status.DesiredNumberScheduled && ds.Status.ObservedGeneration >= ds.Generation {
			return "", nil
		}
		return fmt.Sprintf("its handler %s is ready on %d of %d nodes", client.ObjectKeyFromObject(ds), ds.Status.NumberReady, ds.Status.DesiredNumberScheduled), nil
	}
	return "no handler DaemonSet of kubernetes-nmstate's yet (under OLM: the Subscription's InstallPlan, approved if it asks for it, installs its CSV)", nil
}

// markRolledBack labels the backup as a record: a later move starts afresh.
func (t *Takeover) markRolledBack(ctx context.Context, backup client.ObjectKey) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: backup.Namespace, Name: backup.Name}}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+BackupLabel+`":"`+RolledBack+`"}}}`))
	return client.IgnoreNotFound(t.Client.Patch(ctx, cm, patch))
}

func (t *Takeover) rolledBackWaiting(ctx context.Context) (string, error) {
	cm, err := FindBackup(ctx, t.Client)
	if err != nil || cm == nil {
		return "", err
	}
	return "the backup is not labelled " + RolledBack + " yet", nil
}

func runtimeFromUnstructured(o *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into)
}
