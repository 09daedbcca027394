package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Group is the nodes whose plans are the same, so that 200 workers print once.
type Group struct {
	Nodes []string `json:"nodes"`
	Result
}

// Groups groups results by what they say, in the order of their first node (by name).
func Groups(results []Result) []Group {
	sorted := slices.Clone(results)
	slices.SortFunc(sorted, func(a, b Result) int { return strings.Compare(a.Node, b.Node) })
	var out []Group
	index := map[string]int{}
	for _, r := range sorted {
		key, _ := json.Marshal(r) // Node is not marshalled
		if i, ok := index[string(key)]; ok {
			out[i].Nodes = append(out[i].Nodes, r.Node)
			continue
		}
		index[string(key)] = len(out)
		out = append(out, Group{Nodes: []string{r.Node}, Result: r})
	}
	return out
}

// shownNodes is how many nodes a group's heading names before it counts the rest.
const shownNodes = 8

// Text is the group as the command prints it.
func (g Group) Text() string {
	var b strings.Builder
	names := g.Nodes
	more := ""
	if len(names) > shownNodes {
		names, more = names[:shownNodes], fmt.Sprintf(" and %d more", len(g.Nodes)-shownNodes)
	}
	noun := "nodes"
	if len(g.Nodes) == 1 {
		noun = "node"
	}
	fmt.Fprintf(&b, "%s%s (%d %s):", strings.Join(names, ", "), more, len(g.Nodes), noun)
	if len(g.Changes)+len(g.Conflicts)+len(g.Refusals) == 0 {
		b.WriteString(" no change\n")
		return b.String()
	}
	b.WriteString("\n")
	for _, c := range g.Conflicts {
		fmt.Fprintf(&b, "  conflict %s\n", c)
	}
	for _, r := range g.Refusals {
		fmt.Fprintf(&b, "  refused: %s\n", r)
	}
	for _, c := range g.Changes {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	for _, r := range g.Risks {
		fmt.Fprintf(&b, "  risk: %s\n", r)
	}
	return b.String()
}
