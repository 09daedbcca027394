package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/nmoverlay/nmoverlay/api"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/deploy"
	"github.com/nmoverlay/nmoverlay/internal/adoption"
	"github.com/nmoverlay/nmoverlay/internal/probe"
)

const migrateAbout = `Reads, with the administrator's kubeconfig, what a cluster runs of kubernetes-nmstate and
whether it can move to nmoverlay now, and changes nothing: kubernetes-nmstate's workloads
(operator, handler, webhook, their images; OLM's CSVs), the nmstate.io CRDs and the
versions their objects are stored at, the policies with their enactment's state per node,
and, per node, the interfaces it needs to reach its cluster (its default route's, its API
server route's, its InternalIP's, from its NodeNetworkState) with the policies' interfaces
among them, whose profiles stay persistent at the move. The move waits for every enactment
Available, every node Ready, and stored versions nmoverlay serves.

With --apply FILE (what nmoverlay render wrote: the MachineConfigs and the cluster side),
it makes the move, step by step, each waiting until it holds: back up kubernetes-nmstate's
objects (a ConfigMap in its namespace), stop OLM's install of it, its operator and its
operands (its CRDs, NMState, policies, enactments and states stay), take over the CRDs,
install nmoverlay, hand it the NMState with spec.migrateFrom, wait for every node's plan,
apply the MachineConfigs, wait for every node on the overlay, and end the migration. Every
step is observed, not recorded: run it again after an interruption or a --timeout, from
any machine, and it resumes where the cluster is. Exit status: 0 when the move can start
(or, with --apply, is done), 1 when something keeps it from starting (said why, nothing
changed), a step failed or is still waiting at --timeout, or the cluster cannot be read,
2 on bad usage.

With --rollback FILE (the file the move was made with), it undoes the move from wherever
it stopped, each step waiting until it holds: delete the MachineConfigs and wait for every
node off the overlay, restore on each node the profiles it moved (a pod of nmoverlay's
image runs nm-overlay restore-profiles there), remove nmoverlay, put kubernetes-nmstate's
CRDs back, start kubernetes-nmstate again (its Subscription, or its operator scaled back),
and label the backup rolled-back.`

// runMigrate is `nmoverlay migrate [--kubeconfig FILE] [-o text|yaml|json]`.
func runMigrate(args []string, stdout, stderr io.Writer) int {
	const name = "nmoverlay migrate"
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	kubeconfig := fset.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	output := fset.String("o", "text", "output: text, yaml or json")
	applyFile := fset.String("apply", "", "make the move, with nmoverlay's objects from this file (nmoverlay render's output)")
	rollbackFile := fset.String("rollback", "", "undo the move, with nmoverlay's objects from the file the move was made with")
	timeout := fset.Duration("timeout", 2*time.Hour, "with --apply or --rollback: how long to wait for the steps (run again to resume)")
	poll := fset.Duration("poll", 5*time.Second, "with --apply or --rollback: how often a waiting step reads the cluster again")
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s [--kubeconfig FILE] [-o text|yaml|json] [--apply|--rollback RENDERED.yaml [--timeout D]]\n\n%s\n", name, migrateAbout)
			return exitOK
		}
		fmt.Fprintf(stderr, "%s: %v (see %s -h)\n", name, err, name)
		return exitUsage
	}
	if !slices.Contains([]string{"text", "yaml", "json"}, *output) || fset.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: -o is text, yaml or json, and there are no arguments (see %s -h)\n", name, name)
		return exitUsage
	}
	if *applyFile != "" && *rollbackFile != "" {
		fmt.Fprintf(stderr, "%s: --apply or --rollback, not both (see %s -h)\n", name, name)
		return exitUsage
	}
	var objs []*unstructured.Unstructured
	for flagName, file := range map[string]string{"--apply": *applyFile, "--rollback": *rollbackFile} {
		if file == "" {
			continue
		}
		var err error
		if objs, err = renderedObjects(file); err != nil {
			fmt.Fprintf(stderr, "%s: %s %s: %v\n", name, flagName, file, err)
			return exitUsage
		}
	}
	cfg, c, err := adminClient(*kubeconfig, apiextensionsv1.AddToScheme)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	switch {
	case *applyFile != "":
		return applyMigration(c, cfg.Host, objs, *timeout, *poll, stdout, stderr)
	case *rollbackFile != "":
		return rollBackMigration(c, objs, *timeout, *poll, stdout, stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inv, err := adoption.Read(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	a, err := assess(ctx, inv, cfg.Host)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	switch *output {
	case "json":
		b, _ := json.MarshalIndent(a, "", "  ")
		fmt.Fprintln(stdout, string(b))
	case "yaml":
		b, _ := yaml.Marshal(a)
		fmt.Fprint(stdout, string(b))
	default:
		printAssessment(stdout, a)
	}
	if len(a.Blocking) > 0 {
		return exitError
	}
	return exitOK
}

func assess(ctx context.Context, inv *adoption.Inventory, host string) (adoption.Assessment, error) {
	served, err := deploy.CRDServedVersions()
	if err != nil {
		return adoption.Assessment{}, err
	}
	return adoption.Assess(inv, probe.APIServerAddress(ctx, host), served), nil
}

// renderedObjects reads nmoverlay render's output: it must hold the nmstate.io CRDs and
// the operator, or it is not what the move installs.
func renderedObjects(file string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	objs, err := deploy.Decode(b)
	if err != nil {
		return nil, err
	}
	var crds []string
	operator := false
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			crds = append(crds, o.GetName())
		case "Deployment":
			operator = operator || o.GetName() == operatorDeployment
		}
	}
	for _, name := range adoption.CRDNames {
		if !slices.Contains(crds, name) {
			return nil, fmt.Errorf("no CRD %s in it: give what nmoverlay render writes", name)
		}
	}
	if !operator {
		return nil, fmt.Errorf("no Deployment %s in it: give what nmoverlay render writes", operatorDeployment)
	}
	return objs, nil
}

// operatorDeployment is nmoverlay's operator (deploy/operator.yaml).
const operatorDeployment = "nmoverlay-operator"

// applyMigration makes the move: after the assessment's checks on a cluster where none is
// under way, or resumed where the cluster is when its backup exists.
func applyMigration(c client.Client, host string, objs []*unstructured.Unstructured, timeout, poll time.Duration, stdout, stderr io.Writer) int {
	const name = "nmoverlay migrate"
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	backup, err := adoption.FindBackup(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	var namespace string
	if backup != nil {
		namespace = backup.Namespace
		fmt.Fprintf(stdout, "Resuming the move (its backup is %s/%s).\n", backup.Namespace, backup.Name)
	} else {
		inv, err := adoption.Read(ctx, c)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitError
		}
		a, err := assess(ctx, inv, host)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", name, err)
			return exitError
		}
		if len(a.Blocking) > 0 {
			printAssessment(stdout, a)
			return exitError
		}
		namespace = adoption.Namespace(inv)
	}
	t := &adoption.Takeover{Client: c, Objects: objs}
	if err := adoption.Run(ctx, t.Steps(namespace), poll, printStep(stdout)); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	where := namespace
	if b, err := adoption.FindBackup(ctx, c); err == nil && b != nil {
		where += "/" + b.Name
	}
	fmt.Fprintf(stdout, "The move is done: nmoverlay runs every policy, and kubernetes-nmstate's objects are kept in %s.\n", where)
	return exitOK
}

// rollBackMigration undoes the move from wherever it stopped: its backup says what
// kubernetes-nmstate was, the nodes' reports where their profiles are.
func rollBackMigration(c client.Client, objs []*unstructured.Unstructured, timeout, poll time.Duration, stdout, stderr io.Writer) int {
	const name = "nmoverlay migrate --rollback"
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	backup, err := adoption.FindBackup(ctx, c)
	if err == nil && backup == nil {
		err = fmt.Errorf("no move to roll back: no ConfigMap labelled %s=%s (a rolled-back move's is labelled %s)",
			adoption.BackupLabel, nmstatev1.MigrateFromKubernetesNMState, adoption.RolledBack)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	t := &adoption.Takeover{Client: c, Objects: objs}
	if err := adoption.Run(ctx, t.RollbackSteps(backup), poll, printStep(stdout)); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitError
	}
	fmt.Fprintf(stdout, "The rollback is done: kubernetes-nmstate runs every policy again, its nodes on their restored profiles; "+
		"the backup %s/%s is kept, labelled %s.\n", backup.Namespace, backup.Name, adoption.RolledBack)
	return exitOK
}

func printStep(w io.Writer) adoption.Progress {
	return func(i, n int, step, event string) { fmt.Fprintf(w, "[%d/%d] %s: %s\n", i, n, step, event) }
}

func printAssessment(w io.Writer, a adoption.Assessment) {
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "kubernetes-nmstate:")
	for _, c := range a.Components {
		fmt.Fprintf(tw, "  %s %s/%s\t%d/%d ready\t%s\n", c.Kind, c.Namespace, c.Name, c.Ready, c.Desired, strings.Join(c.Images, ", "))
	}
	for _, c := range a.CSVs {
		fmt.Fprintf(tw, "  ClusterServiceVersion %s/%s\t%s\t%s\n", c.Namespace, c.Name, c.Version, c.Phase)
	}
	if len(a.Components) == 0 && len(a.CSVs) == 0 {
		fmt.Fprintln(tw, "  none found")
	}
	fmt.Fprintf(tw, "  NMState: %s\n", strings.Join(a.NMStates, ", "))
	fmt.Fprintln(tw, "CRDs:")
	for _, d := range a.CRDs {
		fmt.Fprintf(tw, "  %s\tserved %s, storage %s, stored %s\n", d.Name, strings.Join(d.Served, ","), d.Storage, strings.Join(d.Stored, ","))
	}
	fmt.Fprintln(tw, "Policies:")
	for _, p := range a.Policies {
		var nodes []string
		for _, n := range slices.Sorted(maps.Keys(p.Nodes)) {
			nodes = append(nodes, n+": "+p.Nodes[n])
		}
		fmt.Fprintf(tw, "  %s\t%s\n", p.Name, strings.Join(nodes, "; "))
	}
	fmt.Fprintln(tw, "Nodes:")
	for _, n := range a.Nodes {
		readiness := "Ready"
		if !n.Ready {
			readiness = "NotReady"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", n.Name, readiness)
		for _, i := range slices.Sorted(maps.Keys(n.Critical)) {
			fmt.Fprintf(tw, "    needs %s\t%s\n", i, n.Critical[i])
		}
		for _, t := range n.Persistent {
			fmt.Fprintf(tw, "    stays persistent: %s of policy %s\t%s\n", t.Interface, t.Policy, t.Why)
		}
		if m := n.Migration; m != nil {
			for _, p := range m.Move {
				fmt.Fprintf(tw, "    moves at its next boot on the overlay: %s\t%s (policies %s)\n", p.File, p.Interface, strings.Join(p.Policies, ", "))
			}
			for _, p := range m.Stay {
				fmt.Fprintf(tw, "    stays: %s\t%s\n", p.File, p.Detail)
			}
			for _, p := range m.Moved {
				fmt.Fprintf(tw, "    moved: %s\t%s (backup %s)\n", p.File, p.Detail, m.Backup)
			}
		}
	}
	tw.Flush()
	if len(a.Blocking) == 0 {
		fmt.Fprintln(w, "The move can start: nmoverlay migrate --apply RENDERED.yaml makes it (docs/migration.md).")
		return
	}
	fmt.Fprintln(w, "The move cannot start:")
	for _, b := range a.Blocking {
		fmt.Fprintln(w, "  - "+b)
	}
}

// adminClient is a client of the cluster the administrator's kubeconfig names (the file
// given, else $KUBECONFIG, then ~/.kube/config), for nmoverlay's API and Kubernetes', and
// the kinds add adds.
func adminClient(kubeconfig string, add ...func(*runtime.Scheme) error) (*rest.Config, client.Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("no kubeconfig: %w", err)
	}
	scheme, err := api.NewScheme()
	for _, f := range add {
		if err == nil {
			err = f(scheme)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	return cfg, c, err
}
