//go:build integration

// Package apiload measures what the handlers and the cluster controller cost the API
// server, counted from a real kube-apiserver's audit log: simulated clusters of 20, 200 and
// 1,000 nodes (the real handler and reporter per node, each with its own client and user
// agent, an engine double in place of NetworkManager) and the controller as its own process.
package apiload_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/nmoverlay/nmoverlay/api/shared"
	nmstatev1 "github.com/nmoverlay/nmoverlay/api/v1"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/simnode"
)

// auditPolicy records every request once, when its response is complete.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`

// The peer: upstream kubernetes-nmstate's handler, measured with the same method
// (FIELD-NOTES section 6): 20 nodes x 5 policies.
const peerRequestsPerPair, peerWritesPerPair = 73.0, 22.0

// cluster is one simulated cluster on its own API server.
type cluster struct {
	env      *envtest.Environment
	admin    client.Client
	adminCfg *rest.Config
	auditLog string
	nodes    []*simnode.Node
	ctlLog   string
	ctlMu    sync.Mutex
	ctlPID   int
	restarts int // the controller exits when it loses its lease; as its Deployment would, it is started again
}

func (c *cluster) controllerPID() (pid, restarts int) {
	c.ctlMu.Lock()
	defer c.ctlMu.Unlock()
	return c.ctlPID, c.restarts
}

func startCluster(tb testing.TB, nodes int) *cluster {
	tb.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		tb.Fatal("KUBEBUILDER_ASSETS is unset: run make test-integration or make bench (hack/kube-assets.sh builds kube-apiserver and etcd)")
	}
	dir := tb.TempDir()
	c := &cluster{auditLog: filepath.Join(dir, "audit.log")}
	policyFile := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policyFile, []byte(auditPolicy), 0o644); err != nil {
		tb.Fatal(err)
	}
	a, err := kit.StartAPI(func(env *envtest.Environment) {
		env.ControlPlane.GetAPIServer().Configure().
			Append("audit-policy-file", policyFile).
			Append("audit-log-path", c.auditLog).
			Append("audit-log-maxsize", "0")
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = a.Stop() })
	c.env = a.Env
	cfg, scheme := a.Config, a.Scheme
	admin := rest.CopyConfig(cfg)
	admin.UserAgent, admin.QPS, admin.Burst = "apiload-bench", 500, 1000
	c.adminCfg = admin
	if c.admin, err = client.New(admin, client.Options{Scheme: scheme}); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	for i := 0; i < nodes; i++ {
		if _, err := kit.ReadyNode(ctx, c.admin, fmt.Sprintf("node-%03d", i), map[string]string{"role": "worker"}); err != nil {
			tb.Fatal(err)
		}
	}
	c.startController(tb, dir)
	// Each handler gets the client settings of cmd/handler (ctrl.GetConfig: 20 QPS, burst 30).
	handler := rest.CopyConfig(cfg)
	handler.QPS, handler.Burst = 20, 30
	for i := 0; i < nodes; i++ {
		n := simnode.New(fmt.Sprintf("node-%03d", i), handler, scheme)
		if err := n.Start(); err != nil {
			tb.Fatal(err)
		}
		c.nodes = append(c.nodes, n)
	}
	tb.Cleanup(func() {
		for _, n := range c.nodes {
			_ = n.Stop()
		}
	})
	// Steady state: every node's reporter has written its NodeNetworkState.
	c.waitFor(tb, "every node's NodeNetworkState", 2*time.Minute+time.Duration(nodes)*100*time.Millisecond, func() (bool, error) {
		list := &v1beta1.NodeNetworkStateList{}
		err := c.admin.List(ctx, list)
		return len(list.Items) == nodes, err
	})
	return c
}

// controllerUser is who the controller process authenticates as.
const controllerUser = "nmoverlay-controller"

// startController runs cmd/controller as its own process, with leader election as deployed.
func (c *cluster) startController(tb testing.TB, dir string) {
	tb.Cleanup(func() { _ = kit.RemoveBinaries() })
	bin, err := kit.Binary("cmd/controller")
	if err != nil {
		tb.Fatal(err)
	}
	user, err := c.env.AddUser(envtest.User{Name: controllerUser, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		tb.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "controller.kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		tb.Fatal(err)
	}
	c.ctlLog = filepath.Join(dir, "controller.log")
	logFile, err := os.Create(c.ctlLog)
	if err != nil {
		tb.Fatal(err)
	}
	args := []string{"--kubeconfig", kubeconfig, "--leader-election-namespace", "default",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0", "--zap-log-level", "info"}
	stop := make(chan struct{})
	start := func() (*exec.Cmd, error) {
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		c.ctlMu.Lock()
		c.ctlPID = cmd.Process.Pid
		c.ctlMu.Unlock()
		return cmd, nil
	}
	cmd, err := start()
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_ = cmd.Wait()
			select {
			case <-stop:
				return
			default:
			}
			c.ctlMu.Lock()
			c.restarts++
			c.ctlMu.Unlock()
			if cmd, err = start(); err != nil {
				return
			}
		}
	}()
	tb.Cleanup(func() {
		close(stop)
		pid, _ := c.controllerPID()
		_ = syscall.Kill(pid, syscall.SIGKILL)
		<-done
		logFile.Close()
	})
}

func (c *cluster) waitFor(tb testing.TB, what string, timeout time.Duration, done func() (bool, error)) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := done()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(c.ctlLog)
			if len(log) > 4000 {
				log = log[len(log)-4000:]
			}
			tb.Fatalf("timed out waiting for %s (last error: %v); controller log:\n%s", what, err, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// createPolicies creates n policies selecting every worker, each on an interface of its own.
func (c *cluster) createPolicies(tb testing.TB, n int) {
	for i := 0; i < n; i++ {
		p := &nmstatev1.NodeNetworkConfigurationPolicy{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("policy-%02d", i)}}
		p.Spec.NodeSelector = map[string]string{"role": "worker"}
		p.Spec.DesiredState = shared.State{Raw: []byte(fmt.Sprintf(`{"interfaces":[{"name":"dummy%d","type":"dummy","state":"up"}]}`, i))}
		if err := c.admin.Create(context.Background(), p); err != nil {
			tb.Fatal(err)
		}
	}
}

// converged: every policy Available at its generation (the controller's word), then every
// enactment Available. The enactments, 20,000 at 1,000 x 20, are listed only once the
// policies say so: listing them in each poll would load the API server being measured.
func (c *cluster) converged(pairs, policies int) (bool, error) {
	ctx := context.Background()
	list := &nmstatev1.NodeNetworkConfigurationPolicyList{}
	if err := c.admin.List(ctx, list); err != nil {
		return false, err
	}
	for _, p := range list.Items {
		cond := metav1.Condition{}
		for _, pc := range p.Status.Conditions {
			if pc.Type == shared.PolicyAvailable {
				cond = pc
			}
		}
		if cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != p.Generation {
			return false, fmt.Errorf("policy %s: %s", p.Name, cond.Message)
		}
	}
	if len(list.Items) != policies {
		return false, fmt.Errorf("%d of %d policies", len(list.Items), policies)
	}
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := c.admin.List(ctx, enactments); err != nil {
		return false, err
	}
	available := 0
	for i := range enactments.Items {
		if node.IsTrue(&enactments.Items[i], shared.EnactmentAvailable, "") {
			available++
		}
	}
	return available >= pairs, fmt.Errorf("%d of %d enactments available", available, pairs)
}

// auditEvent is what the count needs of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef      *struct{ Resource, Subresource string }
	ResponseStatus *struct{ Code int }
	Received       metav1.MicroTime `json:"requestReceivedTimestamp"`
}

// tally counts one component's requests in a window.
type tally struct {
	requests, writes, events, conflicts, watches int
	byKind                                       map[string]int // "verb resource[/subresource]"
}

func (t *tally) add(e auditEvent) {
	if e.Verb == "watch" {
		t.watches++ // a watch is one long request; counted apart
		return
	}
	t.requests++
	if t.byKind == nil {
		t.byKind = map[string]int{}
	}
	if e.ObjectRef != nil {
		t.byKind[strings.TrimSuffix(e.Verb+" "+e.ObjectRef.Resource+"/"+e.ObjectRef.Subresource, "/")]++
	}
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		t.writes++
		if e.ObjectRef != nil && e.ObjectRef.Resource == "events" {
			t.events++
		}
	}
	if e.ResponseStatus != nil && e.ResponseStatus.Code == 409 {
		t.conflicts++
	}
}

// count tallies the handlers' and the controller's requests received in [from, to), the
// controller's lease renewals only until leasesUntil: the wait for the last status writes
// after convergence is no cost of converging, and renewals go on every 2 s.
func (c *cluster) count(tb testing.TB, from, to, leasesUntil time.Time) (handlers, controller tally) {
	f, err := os.Open(c.auditLog)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			tb.Fatal(err)
		}
		if e.Received.Time.Before(from) || !e.Received.Time.Before(to) {
			continue
		}
		switch {
		case strings.HasPrefix(e.UserAgent, "nmoverlay-handler/"):
			handlers.add(e)
		case e.User.Username == controllerUser: // its binary's name is in its user agent
			if e.ObjectRef != nil && e.ObjectRef.Resource == "leases" && !e.Received.Time.Before(leasesUntil) {
				continue
			}
			controller.add(e)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return handlers, controller
}

// keep copies the run's audit log and controller log into $APILOAD_KEEP, when set, to read
// where a run's time went (requests per second by component, watch restarts).
func (c *cluster) keep(tb testing.TB, run string, start time.Time) {
	dir := os.Getenv("APILOAD_KEEP")
	if dir == "" {
		return
	}
	for from, to := range map[string]string{c.auditLog: run + ".audit.log", c.ctlLog: run + ".controller.log"} {
		b, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, to), b, 0o644)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
	fmt.Printf("    kept in %s: %s.audit.log, %s.controller.log (policies created at %s)\n", dir, run, run, start.UTC().Format(time.RFC3339Nano))
}

// profile takes a 20 s CPU profile of the API server 10 s into the run into $APILOAD_KEEP,
// when set: what its time goes to while converging.
func (c *cluster) profile(tb testing.TB, run string) {
	dir := os.Getenv("APILOAD_KEEP")
	if dir == "" {
		return
	}
	rc, err := rest.RESTClientFor(func() *rest.Config {
		cfg := rest.CopyConfig(c.adminCfg)
		cfg.GroupVersion, cfg.NegotiatedSerializer, cfg.Timeout = &schema.GroupVersion{}, scheme.Codecs.WithoutConversion(), time.Minute
		return cfg
	}())
	if err != nil {
		tb.Fatal(err)
	}
	go func() {
		time.Sleep(10 * time.Second)
		b, err := rc.Get().AbsPath("/debug/pprof/profile").Param("seconds", "20").DoRaw(context.Background())
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, run+".apiserver.pprof"), b, 0o644)
		}
		if err != nil {
			fmt.Println("    profile of the API server:", err)
		}
	}()
}

// lastWrites is how long after convergence the last NodeNetworkState writes may come: the
// reporter's longest spacing, its quiet second and one more.
const lastWrites = node.DefaultMaxInterval + 2*time.Second

// idleWindow is how long a converged cluster is watched for requests it should not make.
const idleWindow = 30 * time.Second

// BenchmarkAPILoad: requests and writes per node-policy pair to converge, 409 conflicts,
// idle requests per node per hour, and the controller's memory, for clusters of 20, 200
// and 1,000 nodes with 5 and 20 policies each (maxUnavailable the default 50%). Run with
// -benchtime 1x.
func BenchmarkAPILoad(b *testing.B) {
	ctrl.SetLogger(logr.Discard())
	fmt.Println("API load, counted from the API server's audit log (handlers in-process with engine doubles, controller a process):")
	fmt.Printf("  %-22s %9s %9s %7s %9s %9s %10s %12s %11s\n", "cluster", "converge", "req/pair", "vs peer", "wr/pair", "vs peer",
		"409s", "idle req/n/h", "idle writes")
	for _, size := range []struct{ nodes, policies int }{{20, 5}, {20, 20}, {200, 5}, {200, 20}, {1000, 5}, {1000, 20}} {
		b.Run(fmt.Sprintf("nodes=%d/policies=%d", size.nodes, size.policies), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c := startCluster(b, size.nodes)
				time.Sleep(2 * time.Second) // informers settled
				start := time.Now()
				c.createPolicies(b, size.policies)
				c.profile(b, fmt.Sprintf("%dx%d", size.nodes, size.policies))
				pairs := size.nodes * size.policies
				c.waitFor(b, "convergence", 10*time.Minute, func() (bool, error) { return c.converged(pairs, size.policies) })
				took := time.Since(start)
				time.Sleep(lastWrites) // the last status writes land
				idleFrom := time.Now()
				time.Sleep(idleWindow)
				idleTo := time.Now()
				time.Sleep(time.Second) // the audit log is flushed
				c.keep(b, fmt.Sprintf("%dx%d", size.nodes, size.policies), start)
				h, ctl := c.count(b, start, idleFrom, start.Add(took))
				pid, restarts := c.controllerPID()
				ih, ictl := c.count(b, idleFrom, idleTo, idleTo)
				reqPair := float64(h.requests+ctl.requests) / float64(pairs)
				wrPair := float64(h.writes+ctl.writes) / float64(pairs)
				perHour := float64(time.Hour) / float64(idleTo.Sub(idleFrom))
				idleReq := float64(ih.requests) * perHour / float64(size.nodes)
				fmt.Printf("  %-22s %9s %9.2f %6.2fx %9.2f %6.2fx %10d %12.1f %11d\n",
					fmt.Sprintf("%d nodes x %d policies", size.nodes, size.policies), took.Round(100*time.Millisecond),
					reqPair, reqPair/peerRequestsPerPair, wrPair, wrPair/peerWritesPerPair, h.conflicts+ctl.conflicts, idleReq, ih.writes)
				fmt.Printf("    enactment writes per pair %.2f (the controller's creation, its grant if the node waited, the node's result); handler lists while converging: %d (a waiting node asks nothing)\n",
					float64(enactmentWrites(h, ctl))/float64(pairs), h.lists())
				fmt.Printf("    handlers: %d requests, %d writes (%d events), %d watches; controller: %d requests, %d writes, %d conflicts; "+
					"idle controller: %d requests, %d writes (lease renewals); controller RSS %.1f MiB, peak %.1f MiB\n",
					h.requests, h.writes, h.events, h.watches, ctl.requests, ctl.writes, ctl.conflicts, ictl.requests, ictl.writes,
					kit.ProcStatusKiB(pid, "VmRSS")/1024, kit.ProcStatusKiB(pid, "VmHWM")/1024)
				if restarts > 0 {
					fmt.Printf("    the controller lost its lease %d times on the loaded API server and was started again\n", restarts)
				}
				fmt.Printf("    handler requests by kind: %v\n    controller requests by kind: %v\n", h.byKind, ctl.byKind)
				b.ReportMetric(reqPair, "req/pair")
				b.ReportMetric(wrPair, "writes/pair")
				b.ReportMetric(float64(h.conflicts+ctl.conflicts), "conflicts")
				b.ReportMetric(idleReq, "idle-req/node/h")
				b.ReportMetric(float64(ih.writes), "idle-writes")
			}
		})
	}
	fmt.Printf("  peer: upstream kubernetes-nmstate, 20 nodes x 5 policies, same method (FIELD-NOTES section 6): %.0f requests and %.0f writes per pair\n",
		peerRequestsPerPair, peerWritesPerPair)
}

// enactmentWrites counts the enactments the controller created, granted a slot on or set
// Pending or Aborted, and the handlers' status writes (they patch them; an update is
// counted too, should one come back).
func enactmentWrites(h, ctl tally) int {
	return ctl.byKind["create nodenetworkconfigurationenactments"] + ctl.byKind["patch nodenetworkconfigurationenactments"] +
		h.byKind["update nodenetworkconfigurationenactments"] + h.byKind["patch nodenetworkconfigurationenactments"]
}

// lists counts list requests: a handler lists only when its informers start (before the
// window) or re-list after a watch expired.
func (h tally) lists() int {
	n := 0
	for kind, c := range h.byKind {
		if strings.HasPrefix(kind, "list ") {
			n += c
		}
	}
	return n
}

// TestAPIBudget holds the handlers and the controller to their API budget on a small
// cluster, so a change that adds requests fails here before the benchmark shows it: 2.5
// enactment writes per node-policy pair (below), no list
// while converging (a node waiting for a slot asks nothing), no 409 conflicts, and nothing
// written by an idle node.
func TestAPIBudget(t *testing.T) {
	ctrl.SetLogger(logr.Discard())
	const nodes, policies = 6, 3
	c := startCluster(t, nodes)
	time.Sleep(2 * time.Second)
	start := time.Now()
	c.createPolicies(t, policies)
	c.waitFor(t, "convergence", 2*time.Minute, func() (bool, error) { return c.converged(nodes*policies, policies) })
	time.Sleep(lastWrites)
	idleFrom := time.Now()
	time.Sleep(10 * time.Second)
	idleTo := time.Now()
	time.Sleep(time.Second)
	h, ctl := c.count(t, start, idleFrom, idleFrom)
	ih, _ := c.count(t, idleFrom, idleTo, idleTo)
	pairs := float64(nodes * policies)
	enactmentWrites := enactmentWrites(h, ctl)
	t.Logf("per pair: %.2f requests, %.2f writes, %.2f enactment writes; conflicts %d; idle: %d requests",
		float64(h.requests+ctl.requests)/pairs, float64(h.writes+ctl.writes)/pairs, float64(enactmentWrites)/pairs, h.conflicts+ctl.conflicts, ih.requests)
	// With maxUnavailable 50%, half the nodes of each policy are granted a slot with their
	// enactment's creation (2 writes: it, and the node's result) and half wait for one (3:
	// the creation, Pending; the grant; the result), with no write and no request of
	// theirs while they wait.
	if budget := 2.5 * pairs; float64(enactmentWrites) > budget {
		t.Errorf("%d enactment writes for %v pairs, budget %v: handlers %v, controller %v", enactmentWrites, pairs, budget, h.byKind, ctl.byKind)
	}
	if h.lists() > 0 {
		t.Errorf("handlers listed %d times while converging: %v", h.lists(), h.byKind)
	}
	if h.conflicts+ctl.conflicts > 0 {
		t.Errorf("%d conflicts (409): a pass decided on a stale cache", h.conflicts+ctl.conflicts)
	}
	if ih.writes > 0 || ih.requests > 0 {
		t.Errorf("idle nodes made %d requests, %d writes: %v", ih.requests, ih.writes, ih.byKind)
	}
}
