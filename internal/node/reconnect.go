package node

import (
	"context"
	"errors"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/nmoverlay/nmoverlay/internal/backend"
)

// Reconnecting drops the connections to the API server that an apply killed. A change of
// the node's addresses or routes can leave them dead without a word: HTTP/2 would find out
// only after its ping timeout (about 45 s), so the probes, the enactment writes and the
// watches would hang on them. Closing them after every apply costs more than a handful of
// requests: each close ends every watch, and client-go's reflector waits a growing backoff
// (0.8 s doubling to 30 s, reset only after 2 quiet minutes) before it watches again, so a
// few applies in a row left the handler deaf to policy changes for half a minute. So
// after an apply and after its commit or rollback, Alive checks the connections (one
// request, bounded by aliveAllowance of how fast they answered before the apply) and
// CloseAll runs only if they are dead.
type Reconnecting struct {
	backend.Backend
	CloseAll func()
	// Alive makes one request over the clients' connections.
	Alive func(ctx context.Context) error
}

// AliveTimeout bounds the check of the connections after an apply when how fast they
// answer was not known before it: a live connection answers in milliseconds.
const AliveTimeout = 2 * time.Second

// aliveAllowance is how long the check after an apply waits for connections that answered
// in rtt before it: 20 times that, and at least half a second, at most AliveTimeout. A
// connection the apply killed never answers, so the allowance is what every apply that
// changes the API server's path pays (the uplink at each boot); one that answers past it
// is closed for nothing, and the watches start again after their backoff.
func aliveAllowance(rtt time.Duration, known bool) time.Duration {
	if !known {
		return AliveTimeout
	}
	return min(max(20*rtt, 500*time.Millisecond), AliveTimeout)
}

func (r Reconnecting) Apply(ctx context.Context, desired backend.Desired) (backend.Transaction, error) {
	allowance := AliveTimeout
	if r.Alive != nil {
		actx, cancel := context.WithTimeout(ctx, AliveTimeout)
		start := time.Now()
		err := r.Alive(actx)
		cancel()
		allowance = aliveAllowance(time.Since(start), err == nil)
	}
	tx, err := r.Backend.Apply(ctx, desired)
	if errors.As(err, new(*backend.BusyError)) {
		return nil, err // nothing was changed
	}
	r.reconnect(ctx, allowance) // the probes must see the network as it is now
	if err != nil {
		return nil, err
	}
	return reconnectingTx{tx, r, allowance}, nil
}

func (r Reconnecting) reconnect(ctx context.Context, allowance time.Duration) {
	if r.Alive != nil {
		actx, cancel := context.WithTimeout(ctx, allowance)
		err := r.Alive(actx)
		cancel()
		if err == nil {
			return
		}
		ctrl.LoggerFrom(ctx).Info("connections to the API server died with the network change: reconnecting", "reason", err.Error())
	}
	r.CloseAll()
}

type reconnectingTx struct {
	backend.Transaction
	r         Reconnecting
	allowance time.Duration
}

func (t reconnectingTx) Commit(ctx context.Context) error {
	defer t.r.reconnect(ctx, t.allowance)
	return t.Transaction.Commit(ctx)
}

func (t reconnectingTx) Rollback(ctx context.Context) error {
	defer t.r.reconnect(ctx, t.allowance)
	return t.Transaction.Rollback(ctx)
}
