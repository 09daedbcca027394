package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/published"
)

// The LAN the published DHCP examples get their leases on: the hub NICs B and C share,
// served by Debian's dnsmasq on NIC D, moved into a network namespace of its own so that
// the guest's NetworkManager never sees it. VLAN 102 is served too (vlan.yaml).
const (
	lanNetNS   = "lan"
	lanSubnet  = "10.99.0."
	lan102     = "10.99.102."
	lanSubnet6 = "2001:db8:99::"
)

// StartLAN starts the DHCP server; stop ends it.
func StartLAN(d string) (stop func(), err error) {
	for _, args := range [][]string{
		{"ip", "netns", "add", lanNetNS},
		{"ip", "link", "set", d, "netns", lanNetNS},
		{"ip", "-n", lanNetNS, "link", "set", "lo", "up"},
		{"ip", "-n", lanNetNS, "link", "set", d, "name", "lan0"},
		{"ip", "-n", lanNetNS, "link", "set", "lan0", "up"},
		{"ip", "-n", lanNetNS, "addr", "add", lanSubnet + "1/24", "dev", "lan0"},
		{"ip", "-n", lanNetNS, "-6", "addr", "add", lanSubnet6 + "1/64", "dev", "lan0", "nodad"},
		{"ip", "-n", lanNetNS, "link", "add", "link", "lan0", "name", "lan0.102", "type", "vlan", "id", "102"},
		{"ip", "-n", lanNetNS, "link", "set", "lan0.102", "up"},
		{"ip", "-n", lanNetNS, "addr", "add", lan102 + "1/24", "dev", "lan0.102"},
	} {
		if out, err := sh(args...); err != nil {
			return nil, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	cmd := exec.Command("ip", "netns", "exec", lanNetNS, "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
		"--port=0", "--user=root", "--group=root", "--bind-interfaces", "--interface=lan0", "--interface=lan0.102",
		"--dhcp-range="+lanSubnet+"100,"+lanSubnet+"199,1h", "--dhcp-range="+lan102+"100,"+lan102+"199,1h",
		"--dhcp-range="+lanSubnet6+"100,"+lanSubnet6+"1ff,64,1h", "--enable-ra",
		"--dhcp-leasefile=/run/lan.leases", "--pid-file=/run/lan-dnsmasq.pid", "--log-dhcp", "--log-facility=/run/lan-dnsmasq.log")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dnsmasq: %w", err)
	}
	return func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }, nil
}

// Published is one example policy as kubernetes-nmstate's docs/examples publish it
// (nmstate/kubernetes-nmstate, docs/examples/<File>), applied unchanged but for the
// interface names (eth1 and eth2 are the guest's B and C), alone, as a node's only policy.
type Published struct {
	File   string
	Policy string
	// Check says whether the example is in effect.
	Check func(e *Env) error
	// Fails, if set, is the interface the example cannot bring up here, and why: the apply
	// must fail naming it, and leave the node as it was.
	Fails, Why string
}

// ApplyPublished applies the policy's desiredState as the node's whole state (the
// handler's way: every other owned profile is pruned) and commits.
func (e *Env) ApplyPublished(ctx context.Context, policy string, opts networkmanager.ApplyOptions) error {
	policy = strings.NewReplacer("eth1", e.NICs.B, "eth2", e.NICs.C).Replace(policy)
	_, desired, err := policyDesired(policy)
	if err != nil {
		return err
	}
	opts.Prune = true
	return e.applyCommit(ctx, desired, opts)
}

// policyDesired is a policy's desired state as written, and as the handler merges it.
func policyDesired(policy string) ([]byte, state.State, error) {
	raw, err := published.DesiredState(policy)
	if err != nil {
		return nil, state.State{}, err
	}
	s := state.State{}
	if len(raw) > 0 {
		if s, err = state.Parse(raw); err != nil {
			return nil, state.State{}, err
		}
	}
	merged, err := state.Merge([]state.Source{{Policy: "published", State: s}})
	if err != nil {
		return nil, state.State{}, err
	}
	return raw, merged.State, nil
}

// leased: the interface holds an address DHCP gave it from the subnet.
func leased(dev, subnet string) error {
	var out string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		out, _ = sh("ip", "-4", "addr", "show", "dev", dev)
		return strings.Contains(out, "inet "+subnet) && strings.Contains(out, "dynamic"), nil
	})
	if err != nil {
		lease, _ := os.ReadFile("/run/lan-dnsmasq.log")
		return fmt.Errorf("%s has no DHCP lease from %s0/24:\n%s\ndnsmasq: %s", dev, subnet, out, tailString(string(lease), 10))
	}
	return nil
}

func tailString(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PublishedDHCP are the examples of kubernetes-nmstate's docs that use DHCP, in an order
// an administrator could apply them (each replaces the one before). Left out: bond.yaml
// (copy-mac-from, not applied yet), per-interface-ipv4-forwarding.yaml (ipv4.forwarding,
// not applied yet), ovs-bridge-iface.yaml (OVS). worker-selector.yaml and dhcp.yaml state
// what ethernet.yaml states.
var PublishedDHCP = []Published{
	{"ethernet.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: eth1
spec:
  desiredState:
    interfaces:
    - name: eth1
      type: ethernet
      state: up
      ipv4:
        dhcp: true
        enabled: true
`, func(e *Env) error { return leased(e.NICs.B, lanSubnet) }, "", ""},
	{"linux-bridge.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: linux-bridge
spec:
  desiredState:
    interfaces:
    - name: br1
      description: Linux bridge with eth1 as a port
      type: linux-bridge
      state: up
      ipv4:
        dhcp: true
        enabled: true
      bridge:
        options:
          stp:
            enabled: false
        port:
        - name: eth1
`, func(e *Env) error {
		if err := expect([]string{"ip", "link", "show", e.NICs.B}, "master br1"); err != nil {
			return err
		}
		return leased("br1", lanSubnet)
	}, "", ""},
	{"detach-bridge-port-and-restore-eth.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: detach-bridge-port-and-restore-eth
spec:
  desiredState:
    interfaces:
    - name: br1
      type: linux-bridge
      state: absent
    - name: eth1
      type: ethernet
      state: up
      ipv4:
        dhcp: true
        enabled: true
`, func(e *Env) error {
		if err := gone("br1"); err != nil {
			return err
		}
		return leased(e.NICs.B, lanSubnet)
	}, "", ""},
	{"vlan.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: vlan-eth1
spec:
  desiredState:
    interfaces:
    - name: eth1.102
      type: vlan
      state: up
      vlan:
        id: 102
        base-iface: eth1
      ipv4:
        dhcp: true
        enabled: true
`, func(e *Env) error { return leased(e.NICs.B+".102", lan102) }, "", ""},
	{"bond-vlan.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: bond-vlan
spec:
  desiredState:
    interfaces:
    - name: bond0
      type: bond
      state: up
      ipv4:
        dhcp: true
        enabled: true
      link-aggregation:
        mode: balance-rr
        options:
          miimon: '140'
        port:
        - eth1
        - eth2
    - name: bond0.102
      type: vlan
      state: up
      ipv4:
        dhcp: true
        enabled: true
      vlan:
        base-iface: bond0
        id: 102
`, func(e *Env) error {
		if err := expect([]string{"cat", "/proc/net/bonding/bond0"}, "load balancing (round-robin)", "MII Polling Interval (ms): 140"); err != nil {
			return err
		}
		if err := leased("bond0", lanSubnet); err != nil {
			return err
		}
		return leased("bond0.102", lan102)
	}, "", ""},
	{"dns.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: dns
spec:
  desiredState:
    dns-resolver:
      config:
        search:
        - example.com
        - example.org
        server:
        - 8.8.8.8
        - 2001:4860:4860::8888
    interfaces:
    - name: eth1
      type: ethernet
      state: up
      ipv4:
        auto-dns: false
        dhcp: true
        enabled: true
      ipv6:
        auto-dns: false
        dhcp: true
        enabled: true
`, func(e *Env) error {
		if err := leased(e.NICs.B, lanSubnet); err != nil {
			return err
		}
		return expect([]string{"cat", "/etc/resolv.conf"}, "nameserver 8.8.8.8", "nameserver 2001:4860:4860::8888", "search example.com example.org")
	}, "", ""},
	{"linux-bridge-vlan.yaml", `
apiVersion: nmstate.io/v1
kind: NodeNetworkConfigurationPolicy
metadata:
  name: linux-bridge-vlan
spec:
  desiredState:
    interfaces:
      - name: br1
        description: Linux bridge with eth1 as a port with custom vlan configuration
        type: linux-bridge
        state: up
        ipv4:
          dhcp: true
          enabled: true
        bridge:
          options:
            stp:
              enabled: false
          port:
            - name: eth1
              vlan:
                mode: trunk
                trunk-tags:
                  - id: 101
                  - id-range:
                      max: 500
                      min: 200
                tag: 100
                enable-native: true
`, nil, "br1", "DHCP runs on the bridge's own port, which stays on the default PVID (VLAN 1) as nmstate leaves it, " +
		"while eth1's untagged traffic, the LAN's DHCP server's, goes to its native VLAN 100: no lease can reach br1"},
}

// publishedScenarios: the LAN, then each published example in turn, then none.
func publishedScenarios() []Scenario {
	out := []Scenario{{"a DHCP server on the LAN, dnsmasq", func(ctx context.Context, e *Env) error {
		stop, err := StartLAN(e.NICs.D)
		if err != nil {
			return err
		}
		e.stopLAN = stop
		return nil
	}}}
	for _, p := range PublishedDHCP {
		if p.Fails != "" {
			out = append(out, Scenario{"published " + p.File + " fails on " + p.Fails + " alone and is rolled back", func(ctx context.Context, e *Env) error {
				before, _ := sh("ip", "-br", "-4", "addr")
				err := e.ApplyPublished(ctx, p.Policy, networkmanager.ApplyOptions{ActivationTimeout: 20 * time.Second})
				var ae *networkmanager.ApplyError
				if !errors.As(err, &ae) || !slices.Equal(ae.Interfaces, []string{p.Fails}) || ae.RollbackErr != nil {
					return fmt.Errorf("want a rolled-back failure naming %s alone (%s), got %v", p.Fails, p.Why, err)
				}
				if err := gone(p.Fails); err != nil {
					return err
				}
				// The rollback re-activates what the apply took over; DHCP takes a moment.
				var after string
				err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					after, _ = sh("ip", "-br", "-4", "addr")
					return after == before, nil
				})
				if err != nil {
					return fmt.Errorf("not as before:\n%s\nwant:\n%s", after, before)
				}
				return nil
			}})
			continue
		}
		out = append(out, Scenario{"published " + p.File + " converges", func(ctx context.Context, e *Env) error {
			if err := e.ApplyPublished(ctx, p.Policy, networkmanager.ApplyOptions{}); err != nil {
				return err
			}
			return p.Check(e)
		}})
	}
	return append(out, Scenario{"deleting the last published policy returns the NICs", func(ctx context.Context, e *Env) error {
		defer func() {
			if e.stopLAN != nil {
				e.stopLAN()
			}
		}()
		if err := e.ApplyPublished(ctx, `spec: {}`, networkmanager.ApplyOptions{}); err != nil {
			return err
		}
		if err := gone("br1"); err != nil {
			return err
		}
		if left := ownedKeyfiles(func(string) bool { return true }); len(left) > 0 {
			return fmt.Errorf("owned profiles left: %v", left)
		}
		return nil
	}})
}

// ownedKeyfiles lists the engine's keyfiles whose text satisfies match.
func ownedKeyfiles(match func(text string) bool) []string {
	const dir = "/etc/NetworkManager/system-connections"
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(dir + "/" + e.Name())
		if err == nil && strings.Contains(string(b), networkmanager.OwnerKey) && match(string(b)) {
			out = append(out, e.Name())
		}
	}
	return out
}
