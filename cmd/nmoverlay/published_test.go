package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The published-examples tier: every NodeNetworkConfigurationPolicy of kubernetes-nmstate's
// docs/examples and of the OpenShift documentation, as equivalent test data
// (test/published/testdata, the source URL and the features each uses in its header),
// checked with the handler's own parser. Those refused are listed here with the reason
// they get, so that a change either way shows; and the table of features in
// docs/published-examples.md is made from the same data, so that it cannot go stale.

const publishedDir = "../../test/published/testdata"

// publishedDoc holds the table TestPublishedTableInDocs keeps up to date; the README links it.
const publishedDoc = "../../docs/published-examples.md"

// publishedRefused are the published policies nmoverlay refuses, with what it says.
var publishedRefused = map[string]string{
	"openshift/k8s-nmstate-creating-alternative-interface-names.yaml":                 "no setting for alternative interface names",
	"openshift/k8s-nmstate-creating-alternative-interface-names-by-identifier-1.yaml": "no setting for alternative interface names",
	"openshift/k8s-nmstate-creating-alternative-interface-names-by-identifier-2.yaml": "no setting for alternative interface names",
	"openshift/k8s-nmstate-deleting-alternative-interface-names-1.yaml":               "no setting for alternative interface names",
	"openshift/k8s-nmstate-deleting-alternative-interface-names-2.yaml":               "no setting for alternative interface names",
	"openshift/k8s-nmstate-deleting-alternative-interface-names-3.yaml":               "no setting for alternative interface names",
	// Published as a fragment with the bridge's address on the OVS bridge itself.
	"openshift/virt-localnet-additional-network-config-1.yaml": "an OVS bridge has no IP configuration of its own",
	"openshift/virt-localnet-additional-network-config-2.yaml": "an OVS bridge has no IP configuration of its own",
	"openshift/virt-localnet-additional-network-config-3.yaml": "an OVS bridge has no IP configuration of its own",
}

// featureVerified says, for each feature the published policies use, where nmoverlay
// applies it for real ("" for a feature it refuses).
var featureVerified = map[string]string{
	"ethernet":               "vm (published DHCP examples), node",
	"dhcp":                   "vm (published DHCP examples, dnsmasq), node",
	"static-ip":              "node, vm",
	"ipv6":                   "vm (published DHCPv6/autoconf examples)",
	"dns":                    "node, vm",
	"routes":                 "node, vm",
	"absent":                 "node, vm",
	"mtu":                    "node, vm",
	"bond":                   "vm (kernel bonding)",
	"vlan":                   "vm",
	"linux-bridge":           "node, vm",
	"bridge-vlan":            "vm (bridge vlan show)",
	"vrf":                    "vm",
	"ovs-bridge":             "node (Open vSwitch, userspace datapath), vm (Debian 13: the localnet policy as published, kernel datapath)",
	"ovs-interface":          "node (Open vSwitch), vm (Debian 13)",
	"ovn-bridge-mappings":    "node (OVSDB), vm (Debian 13)",
	"ovs-bond":               "node (Open vSwitch bond of two NICs: balance-slb, active-backup), vm (Debian 13: balance-slb, kernel datapath)",
	"copy-mac-from":          "node (br-ex customization)",
	"auto-route-metric":      "node (br-ex customization, DHCP)",
	"capture":                "node (bridge on the default route's NIC as published; LLDP selection), vm (lldp.yaml as published)",
	"lldp":                   "node (lldpd on a switch port), vm (lldp.yaml as published)",
	"sr-iov":                 "vm (netdevsim)",
	"route-rules":            "node (ip rule)",
	"ipv4-forwarding":        "refused per node, naming its NetworkManager: node (1.42.4), vm (Debian 13: 1.52.1); 1.54 and builds that announce it apply it (none here)",
	"ipsec":                  "node, vm (Debian 13: activated as published but for the remote host's address, through NetworkManager's VPN machinery with a stand-in for NetworkManager-libreswan, which Debian does not package; no tunnel is built); refused where the node has no plugin",
	"infiniband":             "parsed; refused where the node has no InfiniBand device (node tier), applied through NetworkManager's infiniband setting where it has (not verified on hardware here)",
	"identifier-mac-address": "node (a NIC found by its MAC address)",
}

type publishedPolicy struct {
	file, source string
	features     []string
	problems     []string
}

func readPublished(t *testing.T) []publishedPolicy {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(publishedDir, "*", "*.yaml"))
	if err != nil || len(files) < 60 {
		t.Fatalf("published examples: %d files, %v", len(files), err)
	}
	var out []publishedPolicy
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		p := publishedPolicy{file: strings.TrimPrefix(f, publishedDir+"/")}
		lines := strings.SplitN(string(b), "\n", 3)
		p.source, _ = strings.CutPrefix(lines[0], "# source: ")
		features, ok := strings.CutPrefix(lines[1], "# features: ")
		if !strings.HasPrefix(p.source, "https://github.com/") || !ok {
			t.Fatalf("%s: the header must name its source and features", p.file)
		}
		for _, feat := range strings.Split(features, ",") {
			if feat = strings.TrimSpace(feat); !strings.HasPrefix(feat, "other:") {
				p.features = append(p.features, feat)
			}
		}
		n, problems, _ := validateFile(f)
		if n != 1 {
			t.Fatalf("%s: %d policies, want 1", p.file, n)
		}
		p.problems = problems
		out = append(out, p)
	}
	return out
}

func TestPublishedExamples(t *testing.T) {
	policies := readPublished(t)
	parsed := 0
	for _, p := range policies {
		want, refused := publishedRefused[p.file]
		switch {
		case refused && len(p.problems) == 0:
			t.Errorf("%s (%s) is accepted now: take it off publishedRefused and update docs/published-examples.md", p.file, p.source)
		case refused && !strings.Contains(strings.Join(p.problems, "\n"), want):
			t.Errorf("%s: refused, but not for %q:\n%s", p.file, want, strings.Join(p.problems, "\n"))
		case !refused && len(p.problems) > 0:
			t.Errorf("%s (%s) is refused:\n%s", p.file, p.source, strings.Join(p.problems, "\n"))
		case !refused:
			parsed++
		}
		for _, f := range p.features {
			if _, ok := featureVerified[f]; !ok {
				t.Errorf("%s: feature %q has no entry in featureVerified", p.file, f)
			}
		}
	}
	t.Logf("%d of %d published policies parse", parsed, len(policies))
}

// TestPublishedTableInDocs: the table in docs/published-examples.md is this data's.
func TestPublishedTableInDocs(t *testing.T) {
	checkDocTable(t, "published-examples", "TestPublishedTableInDocs", publishedTable(readPublished(t)))
}

// checkDocTable: the table between publishedDoc's markers for name (made by test) is want.
func checkDocTable(t *testing.T, name, test, want string) {
	t.Helper()
	doc, err := os.ReadFile(publishedDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok1 := strings.Cut(string(doc), "<!-- "+name+": made by "+test+" -->\n")
	table, _, ok2 := strings.Cut(rest, "<!-- /"+name+" -->")
	if !ok1 || !ok2 || table != want {
		t.Errorf("%s's %s table is stale; between the markers it should read:\n%s", publishedDoc, name, want)
	}
}

func publishedTable(policies []publishedPolicy) string {
	total, parsed := map[string]int{}, map[string]int{}
	ok := 0
	for _, p := range policies {
		if len(p.problems) == 0 {
			ok++
		}
		for _, f := range p.features {
			total[f]++
			if len(p.problems) == 0 {
				parsed[f]++
			}
		}
	}
	features := slices.SortedFunc(maps.Keys(total), func(a, b string) int {
		if total[a] != total[b] {
			return total[b] - total[a]
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d published policies, %d of them parse (`make test-unit`, `cmd/nmoverlay/published_test.go`).\n\n", len(policies), ok)
	b.WriteString("| feature | published policies using it | parsed | applied, where verified |\n|---|---|---|---|\n")
	for _, f := range features {
		where := featureVerified[f]
		if where == "" {
			where = "refused, with the reason"
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", f, total[f], parsed[f], where)
	}
	return b.String()
}
