package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/monitoring"
	"github.com/nmoverlay/nmoverlay/internal/state"
)

// DefaultMinInterval and DefaultMaxInterval are the reporter's write spacing unless set
// (Reporter.MinInterval, Reporter.MaxInterval).
const DefaultMinInterval, DefaultMaxInterval = 5 * time.Second, 20 * time.Second

// DefaultQuiet is the reporter's Quiet unless set: NetworkManager reports an out-of-band
// change within milliseconds, and every millisecond waited is one the NodeNetworkState is
// stale by (its freshness on 2,000 interfaces is to stay under 2 s).
const DefaultQuiet = 300 * time.Millisecond

// Reporter keeps the node's NodeNetworkState current: it reads the state when the backend
// signals a change (and at start), and writes only when what it read differs from what
// the object says, so an idle node costs the API server nothing.
type Reporter struct {
	Client   client.Client
	NodeName string
	Show     func(ctx context.Context) (state.State, error)
	Changes  <-chan struct{}
	// Urgent signals a change that must not wait out the spacing of writes (the overlay
	// degraded or healed: every policy is refused meanwhile; drift reported or repaired,
	// which an enactment already says): it is read and written once quiet. Nil for none.
	Urgent    <-chan struct{}
	NMVersion func() (string, error)
	// NMCapabilities are what the node's NetworkManager can apply that not every release
	// can, and its plugins; nil when unknown.
	NMCapabilities func() ([]string, error)
	// EngineVersion is the NodeNetworkState's handlerNmstateVersion (version.Engine).
	EngineVersion string
	// Cache, when set, brings the NodeNetworkState back at once when someone deletes it
	// (its informer's delete event), not at the next change or resync. It is asked for
	// the object's metadata only (NodeNetworkStateMeta).
	Cache cache.Informers
	// APIReader reads the NodeNetworkState whole when what the reporter remembers of it
	// no longer holds (at start, after someone else changed it). Nil: Client.
	APIReader client.Reader
	// Backend names the backend the node's handler applies policies with.
	Backend string
	// Overlay reports the node's keyfile overlay (nm-overlay's status and marker).
	Overlay func() (*v1beta1.OverlayStatus, error)
	// Drift lists what policies committed and was changed since (Handler.Drifted).
	Drift func() []string
	// MaxStateBytes bounds currentState; what does not fit is left out and said so in
	// status.summarized. Default MaxStateBytes.
	MaxStateBytes int
	// Resync re-reads even without a signal, to heal a missed one. Default 10 minutes.
	Resync time.Duration
	// MinInterval spaces writes: changes during it are read and written together at its
	// end, so a burst of applies is one write. It also bounds how long changes that keep
	// coming wait for Quiet. Default 5 seconds.
	MinInterval time.Duration
	// MaxInterval: while the node's state keeps changing (a long rollout grants its
	// policies in waves), each write's spacing doubles from MinInterval up to this; a
	// node at rest that long after its spacing ended starts again at MinInterval. Default
	// 20 seconds; MinInterval when it is smaller.
	MaxInterval time.Duration
	// Transactions, when set, are the handler's: a change is read once none runs.
	Transactions *Transactions
	// Quiet: a change is read once no other came for this long, so that a burst of them
	// (a cable pulled, a command changing several things) is one write of where it ended,
	// not of a step on the way; the handler's own applies are held by Transactions. Default
	// DefaultQuiet.
	Quiet time.Duration

	// written: the NodeNetworkState as this reporter last wrote or read it (report).
	written *written
}

// written is the NodeNetworkState as the reporter last wrote or read it, without its
// state, and a digest of the state. The state (430 KB on 2,000 interfaces) is kept
// neither here nor in the cache, which holds the object's metadata only: a watch of
// the whole object kept a copy of it and decode buffers its size, and decoded each of
// the reporter's writes again (with it gone, and the gateway probe's dump of links, the
// handler's anonymous memory at rest on that node fell from 20.0 to 14.3-14.6 MiB).
type written struct {
	nns *v1beta1.NodeNetworkState // status.currentState left out
	sum [sha256.Size]byte
}

// NodeNetworkStateMeta is the metadata of the NodeNetworkState named name, as the
// handler's cache holds it.
func NodeNetworkStateMeta(name string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name}}
	m.SetGroupVersionKind(v1beta1.GroupVersion.WithKind("NodeNetworkState"))
	return m
}

// Start runs until ctx ends (a controller-runtime Runnable).
func (r *Reporter) Start(ctx context.Context) error {
	resync := r.Resync
	if resync <= 0 {
		resync = 10 * time.Minute
	}
	minInterval, maxInterval, quiet := r.MinInterval, r.MaxInterval, r.Quiet
	if minInterval <= 0 {
		minInterval = DefaultMinInterval
	}
	if maxInterval <= 0 {
		maxInterval = DefaultMaxInterval
	}
	maxInterval = max(maxInterval, minInterval)
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	logger := log.FromContext(ctx).WithName("nns-reporter")
	deleted := make(chan struct{}, 1)
	if r.Cache != nil {
		inf, err := r.Cache.GetInformer(ctx, NodeNetworkStateMeta(""))
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
			select {
			case deleted <- struct{}{}:
			default:
			}
		}}); err != nil {
			return err
		}
	}
	var lastWrite time.Time
	spacing := minInterval
	for {
		// A transaction's changes are read once it committed or rolled back and its last
		// ones settled; so are changes that came while it ran.
		for r.Transactions != nil && r.Transactions.wait(ctx) {
			if !r.settle(ctx, quiet, minInterval) {
				return nil
			}
		}
		wrote, err := r.report(ctx)
		if errors.Is(err, errTransactionBegun) {
			continue // waits for it above
		}
		if err != nil {
			logger.Error(err, "reporting NodeNetworkState")
		}
		if wrote {
			now := time.Now()
			if !lastWrite.IsZero() {
				spacing = nextSpacing(spacing, now.Sub(lastWrite), minInterval, maxInterval)
			}
			lastWrite = now
		}
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-r.Changes:
			if !ok {
				return nil
			}
			if !r.settle(ctx, quiet, minInterval) {
				return nil
			}
			select { // hold the change until the spacing since the last write is over
			case <-ctx.Done():
				return nil
			case <-time.After(time.Until(lastWrite.Add(spacing))):
			case _, ok := <-r.Urgent:
				if !ok || !r.settle(ctx, quiet, minInterval) {
					return nil
				}
			case <-deleted:
			}
		case _, ok := <-r.Urgent:
			if !ok || !r.settle(ctx, quiet, minInterval) {
				return nil
			}
		case <-deleted:
			logger.Info("NodeNetworkState deleted; writing it again", "node", r.NodeName)
		case <-time.After(resync):
		}
	}
}

// nextSpacing is the spacing after a write that came gap after the one before, spaced
// spacing: doubled while the changes keep coming, up to most; least again once the node
// was at rest for most after its spacing ended. At 200 nodes x 20 policies (BenchmarkAPILoad),
// a fixed 5 s wrote each node's state 8-9 times while the rollout lasted.
func nextSpacing(spacing, gap, least, most time.Duration) time.Duration {
	if gap >= spacing+most {
		return least
	}
	return min(2*spacing, most)
}

// settle waits until no change came for quiet, or at most max after the first; false when
// ctx ended or the changes closed.
func (r *Reporter) settle(ctx context.Context, quiet, max time.Duration) bool {
	deadline := time.Now().Add(max)
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case _, ok := <-r.Changes:
			if !ok {
				return false
			}
			t.Reset(min(quiet, time.Until(deadline)))
		case <-t.C:
			return true
		}
	}
}

// errTransactionBegun: a transaction began while the reporter read the node.
var errTransactionBegun = errors.New("a transaction began while the node was read")

// Report reads the state once and writes it if it changed.
func (r *Reporter) Report(ctx context.Context) error {
	_, err := r.report(ctx)
	return err
}

// report reads the node's state and writes the NodeNetworkState if anything differs. A
// read that fails is reported too (Failing, with why), keeping the last state read.
func (r *Reporter) report(ctx context.Context) (wrote bool, err error) {
	var begun uint64
	if r.Transactions != nil {
		begun, _ = r.Transactions.mark()
	}
	current, readErr := r.Show(ctx)
	var raw []byte
	var summarized string
	if readErr == nil {
		monitoring.SetNode(r.NodeName, current) // the whole state, summarized or not
		max := r.MaxStateBytes
		if max <= 0 {
			max = MaxStateBytes
		}
		if raw, summarized, err = fitState(current, max); err != nil {
			return false, err
		}
	}
	status := v1beta1.NodeNetworkStateStatus{CurrentState: shared.State{Raw: raw}, Summarized: summarized, Backend: r.Backend,
		HandlerNmstateVersion: r.EngineVersion}
	if r.NMVersion != nil {
		// The handler applies through the node's own NetworkManager.
		status.HostNetworkManagerVersion, _ = r.NMVersion()
		status.HandlerNetworkManagerVersion = status.HostNetworkManagerVersion
	}
	if r.NMCapabilities != nil {
		status.HostNetworkManagerCapabilities, _ = r.NMCapabilities()
	}
	if r.Overlay != nil {
		if status.Overlay, err = r.Overlay(); err != nil {
			return false, err
		}
	}
	if r.Drift != nil {
		status.Drift = r.Drift()
	}
	// A transaction that began while the node was read makes the read a mix of before and
	// during it (its profiles in tmpfs, its interfaces not yet up): it is read again once
	// the transaction ended.
	if r.Transactions != nil {
		if now, running := r.Transactions.mark(); now != begun || running {
			return false, errTransactionBegun
		}
	}
	nns, sum, err := r.lastWritten(ctx, readErr != nil)
	if err != nil {
		return false, err
	}
	if nns == nil {
		nns = &v1beta1.NodeNetworkState{ObjectMeta: metav1.ObjectMeta{Name: r.NodeName}}
		node := &corev1.Node{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: r.NodeName}, node); err == nil {
			_ = controllerutil.SetOwnerReference(node, nns, r.Client.Scheme())
		}
		if err := r.Client.Create(ctx, nns); err != nil {
			return false, err
		}
		sum = stateSum(nil)
	}
	if readErr != nil {
		// What was read last stands, said to be old.
		status.CurrentState, status.Summarized = nns.Status.CurrentState, nns.Status.Summarized
		status.LastSuccessfulUpdateTime = nns.Status.LastSuccessfulUpdateTime
	}
	status.Conditions = slices.Clone(nns.Status.Conditions)
	shared.SetNodeNetworkState(&status.Conditions, readErr)
	newSum := stateSum(status.CurrentState.Raw)
	if newSum == sum && equality.Semantic.DeepEqual(withoutState(nns.Status), withoutState(status)) {
		return false, readErr
	}
	if readErr == nil {
		status.LastSuccessfulUpdateTime = metav1.Now()
	}
	nns.Status = status
	if err := r.Client.Status().Update(ctx, nns); err != nil {
		r.written = nil // read it whole again
		return false, err
	}
	r.remember(nns, newSum)
	nnsWrites.Inc()
	return true, readErr
}

// withoutState is a status without what stateSum digests and the time of the last write.
func withoutState(s v1beta1.NodeNetworkStateStatus) v1beta1.NodeNetworkStateStatus {
	s.CurrentState, s.LastSuccessfulUpdateTime = shared.State{}, metav1.Time{}
	return s
}

// lastWritten is the NodeNetworkState as last written or read, and its state's digest;
// nil when there is none. The cache says whether it exists and at which version; what
// the reporter remembers serves while that is the version it wrote. Otherwise, or
// withState, it is read whole.
func (r *Reporter) lastWritten(ctx context.Context, withState bool) (*v1beta1.NodeNetworkState, [sha256.Size]byte, error) {
	var none [sha256.Size]byte
	key := types.NamespacedName{Name: r.NodeName}
	meta := NodeNetworkStateMeta(r.NodeName)
	if err := r.Client.Get(ctx, key, meta); apierrors.IsNotFound(err) {
		r.written = nil
		return nil, none, nil
	} else if err != nil {
		return nil, none, err
	}
	if w := r.written; w != nil && !withState && meta.ResourceVersion == w.nns.ResourceVersion {
		return w.nns.DeepCopy(), w.sum, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	nns := &v1beta1.NodeNetworkState{}
	if err := reader.Get(ctx, key, nns); apierrors.IsNotFound(err) {
		r.written = nil
		return nil, none, nil
	} else if err != nil {
		return nil, none, err
	}
	sum := stateSum(nns.Status.CurrentState.Raw)
	r.remember(nns, sum)
	return nns, sum, nil
}

// remember keeps what was written or read of the NodeNetworkState, without its state
// (not copied either).
func (r *Reporter) remember(nns *v1beta1.NodeNetworkState, sum [sha256.Size]byte) {
	current := nns.Status.CurrentState
	nns.Status.CurrentState = shared.State{}
	kept := nns.DeepCopy()
	nns.Status.CurrentState = current
	r.written = &written{nns: kept, sum: sum}
}

// stateSum is a digest of a state's JSON by content: the API server orders its keys
// otherwise than the handler wrote them.
func stateSum(raw []byte) [sha256.Size]byte {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // numbers as written, not as float64
	var v any
	if d.Decode(&v) == nil {
		if canonical, err := json.Marshal(v); err == nil { // map keys sorted
			raw = canonical
		}
	}
	return sha256.Sum256(raw)
}
