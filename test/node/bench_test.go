//go:build node

package node_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/backend"
	"github.com/nmoverlay/nmoverlay/internal/netplan"
	"github.com/nmoverlay/nmoverlay/internal/networkmanager"
	"github.com/nmoverlay/nmoverlay/internal/paths"
	"github.com/nmoverlay/nmoverlay/internal/state"
	"github.com/nmoverlay/nmoverlay/test/kit"
	"github.com/nmoverlay/nmoverlay/test/nmhost"
)

// benchNodes are built once per name and closed after all tests and benchmarks
// (TestMain): the benchmark framework calls a benchmark several times.
var benchNodes = map[string]*benchHost{}

type benchHost struct {
	n  *nmhost.Node
	nm *networkmanager.Client
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, h := range benchNodes {
		h.nm.Close()
		h.n.Close()
	}
	os.Exit(code)
}

func benchNode(b *testing.B, name string, nics int) (*nmhost.Node, *networkmanager.Client) {
	b.Helper()
	if h, ok := benchNodes[name]; ok {
		return h.n, h.nm
	}
	ctx := context.Background()
	n, err := nmhost.New(name)
	if err != nil {
		b.Fatal(err)
	}
	n.BootSetup = func(n *nmhost.Node) error {
		script := fmt.Sprintf(`for i in $(seq 1 %d); do ip link add eth$i type veth peer name eth${i}p && ip link set eth${i}p up; done`, nics)
		_, err := n.Run(ctx, "sh", "-c", script)
		return err
	}
	if err := n.Boot(ctx); err != nil {
		b.Fatal(err)
	}
	if err := n.StartNM(ctx, ""); err != nil {
		b.Fatal(err)
	}
	nm, err := n.ConnectNM(ctx)
	if err != nil {
		b.Fatal(err)
	}
	benchNodes[name] = &benchHost{n, nm}
	return n, nm
}

// The reference change: a bridge with two ports, static IPv4 and IPv6 on four interfaces,
// ten routes; the same as policies, as nmcli commands and as netplan YAML.
var (
	refBridge = `
interfaces:
- name: br0
  type: linux-bridge
  state: up
  ipv4: {enabled: true, address: [{ip: 10.0.0.1, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: "fd00:0::1", prefix-length: 64}]}
  bridge: {options: {stp: {enabled: false}}, port: [{name: eth1}, {name: eth2}]}
`
	refEth = func(i int) string {
		return fmt.Sprintf(`
interfaces:
- name: eth%d
  type: ethernet
  state: up
  ipv4: {enabled: true, address: [{ip: 10.0.%d.1, prefix-length: 24}]}
  ipv6: {enabled: true, address: [{ip: "fd00:%d::1", prefix-length: 64}]}
`, i, i, i)
	}
	refRoutes = func() string {
		var b strings.Builder
		b.WriteString("routes:\n  config:\n")
		for i := 0; i < 10; i++ {
			fmt.Fprintf(&b, "  - {destination: 172.16.%d.0/24, next-hop-address: 10.0.3.254, next-hop-interface: eth3}\n", i)
		}
		return b.String()
	}
	refPolicies = []string{refBridge, refEth(3) + refRoutes(), refEth(4), refEth(5)}
)

func refNmcli() string {
	cmds := []string{
		"nmcli con add type bridge ifname br0 con-name br0 bridge.stp no ipv4.method manual ipv4.addresses 10.0.0.1/24 ipv6.method manual ipv6.addresses fd00:0::1/64",
		"nmcli con add type ethernet ifname eth1 con-name br0-eth1 master br0 slave-type bridge",
		"nmcli con add type ethernet ifname eth2 con-name br0-eth2 master br0 slave-type bridge",
	}
	routes := []string{}
	for i := 0; i < 10; i++ {
		routes = append(routes, fmt.Sprintf("172.16.%d.0/24 10.0.3.254", i))
	}
	for _, i := range []int{3, 4, 5} {
		c := fmt.Sprintf("nmcli con add type ethernet ifname eth%d con-name eth%d ipv4.method manual ipv4.addresses 10.0.%d.1/24 ipv6.method manual ipv6.addresses fd00:%d::1/64", i, i, i, i)
		if i == 3 {
			c += " ipv4.routes '" + strings.Join(routes, ", ") + "'"
		}
		cmds = append(cmds, c)
	}
	for _, c := range []string{"br0", "br0-eth1", "br0-eth2", "eth3", "eth4", "eth5"} {
		cmds = append(cmds, "nmcli -w 30 con up "+c)
	}
	return "set -e\n" + strings.Join(cmds, " >/dev/null\n") + " >/dev/null\n"
}

func refNetplan(dir string) string {
	return fmt.Sprintf(`set -e
mkdir -p %[1]s/etc/netplan
cat > %[1]s/etc/netplan/90-bench.yaml <<'EOF'
%[2]sEOF
chmod 600 %[1]s/etc/netplan/90-bench.yaml
netplan generate --root-dir %[1]s
mkdir -p /run/NetworkManager/system-connections
cp %[1]s/run/NetworkManager/system-connections/* /run/NetworkManager/system-connections/
nmcli con reload
for c in br0 eth1 eth2 eth3 eth4 eth5; do nmcli -w 30 con up netplan-$c >/dev/null; done
`, dir, kit.ReferenceNetplan())
}

// resetNode deletes every profile and the bridge: the node as before a run.
func resetNode(b *testing.B, n *nmhost.Node) {
	_, err := n.Run(context.Background(), "sh", "-c", `
for u in $(nmcli -g UUID,TYPE con show | grep -v ':loopback$' | cut -d: -f1); do nmcli con delete "$u" >/dev/null; done
rm -rf /run/NetworkManager/system-connections/netplan-* /tmp/nmoverlay-bench-netplan /run/netplan
ip link del br0 2>/dev/null || true
for i in 1 2 3 4 5; do ip addr flush dev eth$i; done
nmcli con reload`)
	if err != nil {
		b.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // let NetworkManager settle the devices
}

// BenchmarkApplyReference: the engine's one transaction against raw nmcli (the floor),
// netplan generate + reload + up, and the same change as four per-policy transactions,
// on one NetworkManager, interleaved. Run with -benchtime 1x.
func BenchmarkApplyReference(b *testing.B) {
	n, nm := benchNode(b, "benchapply", 5)
	ctx := context.Background()
	var merged []state.Source
	var perPolicy []state.State
	for i, doc := range refPolicies {
		s, err := state.Parse([]byte(doc))
		if err != nil {
			b.Fatal(err)
		}
		perPolicy = append(perPolicy, s)
		merged = append(merged, state.Source{Policy: fmt.Sprint("p", i), State: s})
	}
	m, err := state.Merge(merged)
	if err != nil {
		b.Fatal(err)
	}
	apply := func(s state.State) {
		tx, err := nm.Apply(ctx, s, networkmanager.ApplyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	// The netplan backend as the handler drives it: the policy checked by netplan's parser
	// (Check, once: the handler keeps its verdict), then one transaction.
	np := &netplan.Backend{NM: nm, Host: netplan.Host{Root: n.PathInNode("/"), Scratch: paths.DefaultLayout().NetplanScratch(),
		Run: func(ctx context.Context, args ...string) ([]byte, error) {
			return n.Command(ctx, args[0], args[1:]...).CombinedOutput()
		}}}
	npDoc, err := np.Parse([]byte(kit.ReferenceNetplan()))
	if err != nil {
		b.Fatal(err)
	}
	npDesired, _, err := np.Merge([]backend.Parsed{{Policy: "reference", State: npDoc}})
	if err != nil {
		b.Fatal(err)
	}
	variants := []struct {
		name string
		run  func()
	}{
		{"engine (one transaction)", func() { apply(m.State) }},
		{"raw nmcli", func() {
			if out, err := n.Run(ctx, "sh", "-c", refNmcli()); err != nil {
				b.Fatal(out, err)
			}
		}},
		{"netplan generate + reload + up", func() {
			if out, err := n.Run(ctx, "sh", "-c", refNetplan("/tmp/nmoverlay-bench-netplan")); err != nil {
				b.Fatal(out, err)
			}
		}},
		{"engine, one transaction per policy", func() {
			for _, s := range perPolicy {
				apply(s)
			}
		}},
		{"netplan backend (one transaction)", func() {
			if err := np.Check(ctx, "reference", []byte(kit.ReferenceNetplan())); err != nil {
				b.Fatal(err)
			}
			tx, err := np.Apply(ctx, npDesired)
			if err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}},
	}
	runs := 7
	times := make([][]time.Duration, len(variants))
	for i := 0; i < b.N; i++ {
		for r := 0; r < runs; r++ {
			for v, variant := range variants {
				resetNode(b, n)
				start := time.Now()
				variant.run()
				times[v] = append(times[v], time.Since(start))
			}
		}
	}
	floor := kit.Median(times[1])
	fmt.Printf("apply of the reference state (bridge + 2 ports, IPv4+IPv6 on 4 interfaces, 10 routes), median of %d:\n", runs)
	for v, variant := range variants {
		md := kit.Median(times[v])
		fmt.Printf("  %-36s %8v  %.2fx raw nmcli\n", variant.name, md.Round(time.Millisecond), float64(md)/float64(floor))
		b.ReportMetric(float64(md.Microseconds())/1000, "ms-"+strings.Fields(strings.ReplaceAll(variant.name, ",", ""))[0]+fmt.Sprint(v))
	}
	b.ReportMetric(float64(kit.Median(times[0]))/float64(floor), "engine/nmcli")
	b.ReportMetric(float64(kit.Median(times[0]))/float64(kit.Median(times[3])), "engine/per-policy")
	b.ReportMetric(float64(kit.Median(times[4]))/float64(kit.Median(times[0])), "netplan-backend/engine")
	b.ReportMetric(float64(kit.Median(times[4]))/float64(kit.Median(times[2])), "netplan-backend/netplan-generate-up")
}

// BenchmarkShow200: reading the current state of a host with 200 interfaces, against
// `nmcli device show` of the same host (NetworkManager's own client, the peer).
func BenchmarkShow200(b *testing.B) { benchShow(b, "benchshow", 100) }

// BenchmarkShow2000: the same on 2,000 interfaces, what the handler's re-read of a big node
// costs.
func BenchmarkShow2000(b *testing.B) { benchShow(b, "benchshow2k", 1000) }

// benchShow reads the state of a host with pairs veth pairs.
func benchShow(b *testing.B, name string, pairs int) {
	n, nm := benchNode(b, name, pairs)
	ctx := context.Background()
	s, err := nm.Show(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if len(s.Interfaces) < 2*pairs {
		b.Fatalf("only %d interfaces", len(s.Interfaces))
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := nm.Show(ctx); err != nil {
			b.Fatal(err)
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	b.StopTimer()
	var peer []time.Duration
	for i := 0; i < 5; i++ {
		t := time.Now()
		if _, err := n.Run(ctx, "nmcli", "-t", "device", "show"); err != nil {
			b.Fatal(err)
		}
		peer = append(peer, time.Since(t))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	status, _ := os.ReadFile("/proc/self/status")
	rss := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			rss = strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:"))
		}
	}
	fmt.Printf("Show of %d interfaces: %v per read (nmcli -t device show: %v, ratio %.2fx); heap in use %.1f MiB, process peak RSS %s\n",
		len(s.Interfaces), per.Round(time.Millisecond), kit.Median(peer).Round(time.Millisecond), float64(per)/float64(kit.Median(peer)),
		float64(ms.HeapInuse)/(1<<20), rss)
	b.ReportMetric(float64(per)/float64(kit.Median(peer)), "show/nmcli")
}
