package node

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"syscall"
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
	// Gone, when set, names a local address of the connections that the node no longer
	// has (LocalAddrs.Gone): those are dead, and closed without waiting for Alive.
	Gone func() (netip.Addr, bool)
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
	if r.Gone != nil {
		if addr, gone := r.Gone(); gone {
			ctrl.LoggerFrom(ctx).Info("connections to the API server died with the network change: reconnecting",
				"reason", "their local address "+addr.String()+" is no longer on the node")
			r.CloseAll()
			return
		}
	}
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

// LocalAddrs tracks the local addresses of the clients' open connections (Dial wraps
// their dial function). After an apply that removed one of them from the node (the
// uplink's address changed), Gone says so at once: a connection from an address the node
// no longer has is dead, and waiting for it to answer (aliveAllowance) cost every such
// apply 0.5 s at least, a boot's re-convergence among them. The zero value is ready.
type LocalAddrs struct {
	mu    sync.Mutex
	inUse map[netip.Addr]int // open connections by local address
	// onNode says whether the node has addr; nil: OnNode.
	onNode func(addr netip.Addr) bool
}

// Dial wraps dial so that each connection it opens is tracked until closed.
func (l *LocalAddrs) Dial(dial func(ctx context.Context, network, address string) (net.Conn, error)) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		ap, err := netip.ParseAddrPort(conn.LocalAddr().String())
		if err != nil {
			return conn, nil // not IP (a unix socket): nothing to track
		}
		addr := ap.Addr().Unmap()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inUse == nil {
			l.inUse = map[netip.Addr]int{}
		}
		l.inUse[addr]++
		return &trackedConn{Conn: conn, release: func() { l.release(addr) }}, nil
	}
}

func (l *LocalAddrs) release(addr netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inUse[addr]--; l.inUse[addr] <= 0 {
		delete(l.inUse, addr)
	}
}

// Gone is a local address of an open connection that the node no longer has.
func (l *LocalAddrs) Gone() (netip.Addr, bool) {
	l.mu.Lock()
	addrs := make([]netip.Addr, 0, len(l.inUse))
	for a := range l.inUse {
		addrs = append(addrs, a)
	}
	l.mu.Unlock()
	onNode := l.onNode
	if onNode == nil {
		onNode = OnNode
	}
	for _, a := range addrs {
		if !onNode(a) {
			return a, true
		}
	}
	return netip.Addr{}, false
}

// OnNode says whether the node (this process's network namespace) has addr: the kernel
// lets a socket bind only to its own addresses (EADDRNOTAVAIL otherwise), one system
// call where listing the addresses reads every interface. Any other error says yes: the
// connection is then checked by answering.
func OnNode(addr netip.Addr) bool {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		return !errors.Is(err, syscall.EADDRNOTAVAIL)
	}
	_ = c.Close()
	return true
}

// trackedConn releases its local address once closed.
type trackedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *trackedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
