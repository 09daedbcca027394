package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Ping is an ICMP echo to an address (the default gateway, as kubernetes-nmstate does).
// Target returns the address to ping now ("" when there is none: the probe then passes).
func Ping(name string, target func(ctx context.Context) (netip.Addr, error)) Probe {
	return Func{ProbeName: name, Fn: func(ctx context.Context) error {
		addr, err := target(ctx)
		if err != nil {
			return err
		}
		if !addr.IsValid() {
			return errors.New("no default gateway")
		}
		return ping(ctx, addr)
	}}
}

func ping(ctx context.Context, addr netip.Addr) error {
	network, proto := "ip4:icmp", 1
	var typ icmp.Type = ipv4.ICMPTypeEcho
	if addr.Is6() {
		network, proto, typ = "ip6:ipv6-icmp", 58, ipv6.ICMPTypeEchoRequest
	}
	conn, err := icmp.ListenPacket(network, "")
	if err != nil {
		return err
	}
	defer conn.Close()
	id := os.Getpid() & 0xffff
	msg, _ := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: 1, Data: []byte("nmoverlay")}}).Marshal(nil)
	if _, err := conn.WriteTo(msg, &net.IPAddr{IP: addr.AsSlice()}); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Second)
	}
	_ = conn.SetReadDeadline(deadline)
	buf := make([]byte, 1500)
	for {
		n, peer, err := conn.ReadFrom(buf)
		if err != nil {
			return fmt.Errorf("no echo reply from %s: %w", addr, err)
		}
		reply, err := icmp.ParseMessage(proto, buf[:n])
		if err != nil {
			continue
		}
		if echo, ok := reply.Body.(*icmp.Echo); ok && echo.ID == id && peer.String() == addr.String() &&
			(reply.Type == ipv4.ICMPTypeEchoReply || reply.Type == ipv6.ICMPTypeEchoReply) {
			return nil
		}
	}
}

// DNS resolves a name with the node's resolver (the target is configurable: disconnected
// sites have no root servers to ask).
func DNS(host string, resolver *net.Resolver) Probe {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return Func{ProbeName: "dns", Fn: func(ctx context.Context) error {
		addrs, err := resolver.LookupHost(ctx, host)
		if err == nil && len(addrs) == 0 {
			err = fmt.Errorf("%s resolved to nothing", host)
		}
		return err
	}}
}

// APIServer asks the API server its version, uncached, over the node's network.
func APIServer(cfg *rest.Config) Probe {
	return Func{ProbeName: "api-server", Fn: func(ctx context.Context) error {
		c := rest.CopyConfig(cfg)
		if d, ok := ctx.Deadline(); ok {
			c.Timeout = time.Until(d)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(c)
		if err != nil {
			return err
		}
		_, err = dc.ServerVersion()
		return err
	}}
}

// NodeReady reads the node from the API server (uncached) and wants it Ready. Its baseline
// is one read (Once): after a boot the kubelet reports NotReady until its first pod
// lifecycle relist (10 s here), which no retry within seconds sees end.
func NodeReady(reader client.Reader, nodeName string) Probe {
	return Func{ProbeName: "node-ready", Once: true, Fn: func(ctx context.Context) error {
		n := &corev1.Node{}
		if err := reader.Get(ctx, client.ObjectKey{Name: nodeName}, n); err != nil {
			return err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return nil
				}
				return fmt.Errorf("node %s is %s: %s", nodeName, c.Status, c.Message)
			}
		}
		return fmt.Errorf("node %s reports no Ready condition", nodeName)
	}}
}

// APIServerAddress is the address of the API server at host (a kubeconfig's server URL):
// the URL's own when it is an address, else the first its name resolves to; invalid when
// neither. The node's route to it is one it needs to reach its cluster.
func APIServerAddress(ctx context.Context, host string) netip.Addr {
	u, err := url.Parse(host)
	if err != nil {
		return netip.Addr{}
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		return ip
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", u.Hostname())
	if err != nil || len(ips) == 0 {
		return netip.Addr{}
	}
	return ips[0].Unmap()
}
