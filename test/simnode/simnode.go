// Package simnode runs simulated nodes against a real API server: the real handler and
// NodeNetworkState reporter (internal/node), each node with its own scoped cache, client
// and user agent, and an engine double in place of NetworkManager (tested for real in the
// node and VM tiers). The integration tier and the API-load benchmark share it.
package simnode

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/node"
	"github.com/nmoverlay/nmoverlay/internal/probe"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/internal/version"
)

// Engine keeps the state in effect, records every commit and rollback, and fails states
// naming an interface "broken0"; each commit signals a change, as NetworkManager would.
type Engine struct {
	backend.NMState
	mu        sync.Mutex
	current   state.State   // in effect: the last committed state
	pending   *state.State  // applied, not yet committed or rolled back
	commits   []state.State // every committed state, in order
	rollbacks int
	applies   int             // every Apply, converged or not
	tried     map[string]bool // every interface name an Apply was given
	changes   chan struct{}
}

// NewEngine returns an engine with nothing applied.
func NewEngine() *Engine { return &Engine{changes: make(chan struct{}, 1)} }

type tx struct{ e *Engine }

func (t tx) Commit(context.Context) error {
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	t.e.current = *t.e.pending
	t.e.commits = append(t.e.commits, *t.e.pending)
	t.e.pending = nil
	select {
	case t.e.changes <- struct{}{}:
	default:
	}
	return nil
}

func (t tx) Rollback(context.Context) error {
	t.e.mu.Lock()
	defer t.e.mu.Unlock()
	t.e.rollbacks++
	t.e.pending = nil
	return nil
}

// Apply puts s in effect, pending a commit.
func (e *Engine) Apply(_ context.Context, d backend.Desired) (backend.Transaction, error) {
	s, err := backend.NMStateOf(d)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applies++
	if e.tried == nil {
		e.tried = map[string]bool{}
	}
	for _, it := range s.Interfaces {
		e.tried[it.Name] = true
	}
	for _, it := range s.Interfaces {
		if it.Name == "broken0" {
			return nil, errors.New("did not converge: broken0: does not exist; rolled back")
		}
	}
	e.pending = &s
	return tx{e}, nil
}

// Check: nmstate's schema is checked whole by Parse.
func (e *Engine) Check(context.Context, string, []byte) error { return nil }

// Show is the committed state.
func (e *Engine) Show(context.Context) (state.State, error) {
	s, _ := e.Last()
	return s, nil
}

// Changes signals each commit. One reader: the node's reporter.
func (e *Engine) Changes(context.Context) (<-chan struct{}, error) { return e.changes, nil }

// InEffect is what the probes see: the pending state while a transaction is open.
func (e *Engine) InEffect() state.State {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pending != nil {
		return *e.pending
	}
	return e.current
}

// Last is the committed state and the number of commits so far.
func (e *Engine) Last() (state.State, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.current, len(e.commits)
}

// Committed is every committed state, in order.
func (e *Engine) Committed() []state.State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]state.State(nil), e.commits...)
}

// Applies counts every Apply, converged or not.
func (e *Engine) Applies() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.applies
}

// Tried reports whether an Apply, converged or not, was ever given interface name.
func (e *Engine) Tried(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.tried[name]
}

// Rollbacks counts the transactions rolled back.
func (e *Engine) Rollbacks() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rollbacks
}

// GatewayProbe fails while the state in effect has an interface "cutgw0", as a real
// gateway probe would after a policy that breaks the default route.
func (e *Engine) GatewayProbe() probe.Probe {
	return probe.Func{ProbeName: "default-gateway", Fn: func(context.Context) error {
		for _, it := range e.InEffect().Interfaces {
			if it.Name == "cutgw0" {
				return errors.New("no echo reply from 192.0.2.1")
			}
		}
		return nil
	}}
}

// Node is one simulated node: the handler and the reporter in a manager of their own.
type Node struct {
	Name   string
	Engine *Engine
	// Config is the API server; each node's client carries the user agent
	// "nmoverlay-handler/<name>", so the API server's audit log tells nodes apart.
	Config *rest.Config
	Scheme *runtime.Scheme
	// RebootGate, set before Start, has its handler lift the node's reboot gate (the
	// handler's --reboot-gate=Taint).
	RebootGate *node.RebootGate

	// requests counts the HTTP requests its handler and reporter sent (a watch once).
	requests atomic.Int64
	mu       sync.Mutex
	boot     string
	degraded string
	stop     context.CancelFunc
	done     chan error
}

// New returns a stopped node in boot "boot-1".
func New(name string, cfg *rest.Config, scheme *runtime.Scheme) *Node {
	return &Node{Name: name, Engine: NewEngine(), Config: cfg, Scheme: scheme, boot: "boot-1"}
}

// UserAgent is the user agent of node name's handler.
func UserAgent(name string) string { return "nmoverlay-handler/" + name }

// Start runs the node's handler and reporter until Stop.
func (n *Node) Start() error {
	cfg := rest.CopyConfig(n.Config)
	cfg.UserAgent = UserAgent(n.Name)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counting{rt, &n.requests} })
	skip := true // several nodes' handlers share one process
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:     n.Scheme,
		Cache:      node.CacheOptions(n.Name),
		Metrics:    metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: &skip},
	})
	if err != nil {
		return err
	}
	h := &node.Handler{Client: mgr.GetClient(), NodeName: n.Name, Backend: n.Engine, APIReader: mgr.GetAPIReader(),
		Events:       mgr.GetEventRecorder("nmoverlay-handler"),
		BootID:       func() (string, error) { n.mu.Lock(); defer n.mu.Unlock(); return n.boot, nil },
		Degraded:     func() (string, error) { n.mu.Lock(); defer n.mu.Unlock(); return n.degraded, nil },
		Probes:       probe.Set{Probes: []probe.Probe{n.Engine.GatewayProbe()}, Timeout: 500 * time.Millisecond},
		RebootGate:   n.RebootGate,
		Transactions: &node.Transactions{},
	}
	if err := h.SetupWithManager(mgr); err != nil {
		return err
	}
	err = mgr.Add(&node.Reporter{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), NodeName: n.Name, Changes: n.Engine.changes,
		Show:          func(context.Context) (state.State, error) { s, _ := n.Engine.Last(); return s, nil },
		NMVersion:     func() (string, error) { return "1.42.4", nil },
		EngineVersion: version.Engine("simulated"), Cache: mgr.GetCache(), Transactions: h.Transactions,
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.stop, n.done = cancel, make(chan error, 1)
	go func() { n.done <- mgr.Start(ctx) }()
	return nil
}

// Requests is how many HTTP requests the node's handler and reporter sent so far, in every
// start (a watch counts once, when it is opened).
func (n *Node) Requests() int64 { return n.requests.Load() }

type counting struct {
	rt http.RoundTripper
	n  *atomic.Int64
}

func (c counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if os.Getenv("SIMNODE_DEBUG") != "" {
		fmt.Fprintln(os.Stderr, "SIMREQ", time.Now().Format("15:04:05.000"), r.Method, r.URL.String(), r.UserAgent())
	}
	c.n.Add(1)
	return c.rt.RoundTrip(r)
}

// Stop stops the handler and returns what its manager returned; a stopped node's Stop
// does nothing.
func (n *Node) Stop() error {
	if n.stop == nil {
		return nil
	}
	n.stop()
	n.stop = nil
	return <-n.done
}

// Reboot stops the handler (if it runs), moves the node to a new boot and starts it again.
func (n *Node) Reboot(boot string) error {
	if err := n.Stop(); err != nil {
		return err
	}
	n.mu.Lock()
	n.boot = boot
	n.mu.Unlock()
	return n.Start()
}

// SetDegraded marks the node's overlay degraded (reason) or healthy ("").
func (n *Node) SetDegraded(reason string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.degraded = reason
}
