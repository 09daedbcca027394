// Command layers checks that nmoverlay's packages import only downward (make lint). Each
// package has a floor; a package imports only packages on lower floors, plus the rules
// below. A package with no floor fails the check: a new package is placed on purpose.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

const module = "github.com/nmoverlay/nmoverlay"

// floors, lowest first. Packages under test/ and hack/ are above every floor.
var floors = [][]string{
	// Definitions with no I/O of ours: field paths, the version.
	{"api/field", "internal/version", "internal/atomicfile", "internal/keyfile"},
	// The API's types, and the pure decisions and clients nothing here depends on.
	{"api/shared", "internal/state", "internal/nmpolicy", "internal/ovsdb", "internal/networkmanager/nmdbus",
		"internal/probe", "internal/readyourwrites", "internal/serving", "internal/paths", "internal/migration"},
	{"api/v1", "internal/overlay"},
	{"api/v1beta1", "internal/machineconfigs"},
	// The reboot gate's decision, which the controller, the handler and the operator share;
	// the peer's metrics, which the controller and the handler export.
	{"api", "deploy", "internal/rebootgate", "internal/monitoring"},
	// The seam between the handler and the backends.
	{"internal/backend"},
	// The engine over NetworkManager, and the networkmanager backend on it.
	{"internal/networkmanager"},
	// netplan applies its generated profiles through the engine.
	{"internal/netplan"},
	// The reconcilers.
	{"internal/node", "internal/cluster", "internal/operator", "internal/adoption"},
	// What the handler would do, decided off the node; what the node runs, drawn.
	{"internal/plan", "internal/topology"},
	// The binaries.
	{"cmd/handler", "cmd/controller", "cmd/operator", "cmd/nmoverlay", "cmd/nm-overlay"},
}

// forbidden are imports the floors allow and the design does not: the handler knows a
// backend only through the seam.
var forbidden = map[string][]string{
	"internal/node": {"internal/networkmanager", "internal/netplan"},
}

// noKubernetesClient are the binaries that must link no Kubernetes client: nm-overlay runs
// at boot before the cluster, as a 3.7 MB static binary.
var noKubernetesClient = []string{"cmd/nm-overlay"}

var kubernetesClients = []string{"k8s.io/client-go", "sigs.k8s.io/controller-runtime", "k8s.io/apimachinery"}

type pkg struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func main() {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "layers: go list:", err)
		os.Exit(2)
	}
	var problems []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			fmt.Fprintln(os.Stderr, "layers:", err)
			os.Exit(2)
		}
		problems = append(problems, check(p)...)
	}
	if len(problems) > 0 {
		fmt.Fprintln(os.Stderr, "layers: imports that do not point down:")
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		os.Exit(1)
	}
}

// check returns what is wrong with p's imports.
func check(p pkg) []string {
	name, ok := strings.CutPrefix(p.ImportPath, module+"/")
	if !ok || strings.HasPrefix(name, "test/") || strings.HasPrefix(name, "hack/") {
		return nil
	}
	floor := floorOf(name)
	if floor < 0 {
		return []string{fmt.Sprintf("%s has no floor: place it in hack/layers", name)}
	}
	var problems []string
	for _, imp := range p.Imports {
		dep, ours := strings.CutPrefix(imp, module+"/")
		if !ours {
			continue
		}
		switch f := floorOf(dep); {
		case slices.Contains(forbidden[name], dep):
			problems = append(problems, fmt.Sprintf("%s imports %s: it knows backends only through internal/backend", name, dep))
		case f < 0 && !strings.HasPrefix(dep, "test/"):
			problems = append(problems, fmt.Sprintf("%s imports %s, which has no floor", name, dep))
		case f < 0 || f >= floor:
			problems = append(problems, fmt.Sprintf("%s (floor %d) imports %s (floor %d)", name, floor, dep, f))
		}
	}
	if slices.Contains(noKubernetesClient, name) {
		for _, d := range p.Deps {
			for _, c := range kubernetesClients {
				if d == c || strings.HasPrefix(d, c+"/") {
					problems = append(problems, fmt.Sprintf("%s links %s: it must link no Kubernetes client", name, d))
				}
			}
		}
	}
	return problems
}

func floorOf(name string) int {
	for i, f := range floors {
		if slices.Contains(f, name) {
			return i
		}
	}
	return -1
}
