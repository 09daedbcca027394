package topology

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The picture's measures, in pixels. Text is monospace, so that a line's width follows
// from its length: a box is as wide as its longest line, and no label leaves its box.
const (
	fontSize   = 12
	charWidth  = 7.3 // DejaVu Sans Mono and Liberation Mono at 12px: 0.6em, with a margin
	lineHeight = 15
	padding    = 6
	columnGap  = 72 // room for the edges between columns
	rowGap     = 10
	maxChars   = 56 // a longer line is cut, and whole in the box's tooltip
	// collapseAt is the fewest siblings that collapse into one box.
	collapseAt = 4
)

// layout places boxes in columns by what they stand on (a box stands right of all it
// stands on), collapses siblings that say the same, and gives each box its place: the
// connected parts one under the other (the small ones first, lone boxes last), so that
// what belongs together stays together and no edge crosses another part; in each part,
// each column ordered to shorten the edges. It returns the boxes and the picture's size.
func layout(boxes []*box) ([]*box, float64, float64) {
	layers(boxes)
	boxes = collapse(boxes)
	// One width per column, over every part: the columns line up.
	var widths []float64
	for _, b := range boxes {
		b.w, b.h = size(b)
		for len(widths) <= b.layer {
			widths = append(widths, 0)
		}
		widths[b.layer] = max(widths[b.layer], b.w)
	}
	xs := make([]float64, len(widths))
	width := 0.0
	for l, w := range widths {
		xs[l] = width
		width += w + columnGap
	}
	height := 0.0
	for _, part := range parts(boxes) {
		height = place(part, xs, widths, height) + partGap
	}
	return boxes, max(width-columnGap, 0), max(height-partGap, 0)
}

// partGap is the room between two connected parts.
const partGap = 2 * rowGap

// parts are the connected parts of boxes (by what stands on what): those of several boxes
// from the smallest, then the lone boxes, each in name order.
func parts(boxes []*box) [][]*box {
	root := map[*box]*box{}
	var find func(b *box) *box
	find = func(b *box) *box {
		if r, ok := root[b]; ok && r != b {
			root[b] = find(r)
			return root[b]
		}
		return b
	}
	for _, b := range boxes {
		for _, d := range b.below {
			if rb, rd := find(b), find(d); rb != rd {
				root[rb] = rd
			}
		}
	}
	byRoot := map[*box][]*box{}
	var roots []*box
	for _, b := range boxes {
		r := find(b)
		if _, ok := byRoot[r]; !ok {
			roots = append(roots, r)
		}
		byRoot[r] = append(byRoot[r], b)
	}
	var out [][]*box
	for _, r := range roots {
		part := byRoot[r]
		slices.SortFunc(part, func(a, b *box) int { return natural(a.names[0], b.names[0]) })
		out = append(out, part)
	}
	slices.SortStableFunc(out, func(a, b []*box) int {
		la, lb := len(a), len(b)
		if (la == 1) != (lb == 1) {
			return cmp.Compare(lb, la) // lone boxes last
		}
		if la != lb {
			return cmp.Compare(la, lb)
		}
		return natural(a[0].names[0], b[0].names[0])
	})
	return out
}

// place orders each column of one part by the mean row of what its boxes stand on (the
// barycentre heuristic, one sweep), and places its boxes from top: a box as
// near the middle of what it stands on as the boxes above it in its column let it be. It
// returns the part's bottom.
func place(part []*box, xs, widths []float64, top float64) float64 {
	columns := make([][]*box, len(xs))
	for _, b := range part {
		columns[b.layer] = append(columns[b.layer], b)
	}
	for _, col := range columns {
		for i, b := range col {
			b.row = i
		}
	}
	mean := func(bs []*box, own int) float64 {
		if len(bs) == 0 {
			return float64(own)
		}
		sum := 0.0
		for _, o := range bs {
			sum += float64(o.row)
		}
		return sum / float64(len(bs))
	}
	order := func(col []*box, key func(*box) float64) {
		keys := map[*box]float64{}
		for _, b := range col {
			keys[b] = key(b)
		}
		slices.SortStableFunc(col, func(a, b *box) int { return cmp.Compare(keys[a], keys[b]) })
		for i, b := range col {
			b.row = i
		}
	}
	// The first column in name order (its boxes stand on nothing), each next one by what
	// its boxes stand on, ties in name order: a bond's VLANs read eth0.100, eth0.101, ...
	for l := 1; l < len(columns); l++ {
		order(columns[l], func(b *box) float64 { return mean(b.below, b.row) })
	}
	bottom := top
	for l, col := range columns {
		y := top
		for _, b := range col {
			want := y
			if len(b.below) > 0 {
				lo, hi := b.below[0].y, b.below[0].y+b.below[0].h
				for _, d := range b.below {
					lo, hi = min(lo, d.y), max(hi, d.y+d.h)
				}
				want = max(y, (lo+hi)/2-b.h/2)
			}
			b.x, b.y, b.w = xs[l], want, widths[l] // one width per column: the edges leave from one line
			y = b.y + b.h + rowGap
		}
		bottom = max(bottom, y-rowGap)
	}
	return bottom
}

// layers puts each box one column right of the rightmost it stands on; a cycle, which a
// state should not have, is cut where it is met.
func layers(boxes []*box) {
	const visiting = -2
	for _, b := range boxes {
		b.layer = -1
	}
	var place func(b *box) int
	place = func(b *box) int {
		switch b.layer {
		case visiting:
			return 0
		case -1:
		default:
			return b.layer
		}
		b.layer = visiting
		l := 0
		for _, d := range b.below {
			l = max(l, place(d)+1)
		}
		b.layer = l
		return l
	}
	for _, b := range boxes {
		place(b)
	}
}

// collapse makes one box of each set of collapseAt or more boxes in a column that say
// the same (type, state, profile, policies, no address, drift or LLDP neighbour of their
// own) and stand on, and under, the same boxes.
func collapse(boxes []*box) []*box {
	above := map[*box][]*box{}
	for _, b := range boxes {
		for _, d := range b.below {
			above[d] = append(above[d], b)
		}
	}
	ids := map[*box]int{}
	for i, b := range boxes {
		ids[b] = i
	}
	refs := func(bs []*box) string {
		var s []string
		for _, b := range bs {
			s = append(s, strconv.Itoa(ids[b]))
		}
		slices.Sort(s)
		return strings.Join(s, ",")
	}
	groups := map[string][]*box{}
	var keys []string
	for _, b := range boxes {
		sig, ok := signature(b)
		if !ok {
			continue
		}
		k := fmt.Sprintf("%d|%s|%s|%s", b.layer, sig, refs(b.below), refs(above[b]))
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], b)
	}
	merged := map[*box]*box{} // member → its group's box
	for _, k := range keys {
		members := groups[k]
		if len(members) < collapseAt {
			continue
		}
		first := members[0]
		g := &box{key: first.key, typ: first.typ, state: first.state, below: first.below, layer: first.layer,
			persistent: first.persistent}
		var peers []string
		for _, m := range members {
			g.names = append(g.names, m.names...)
			if m.peer != "" {
				peers = append(peers, m.peer)
			}
			merged[m] = g
		}
		g.lines = append([]line{{fmt.Sprintf("%s  %d × %s", Names(g.names), len(members), first.typ), "name"}}, first.lines[1:]...)
		g.lines = slices.DeleteFunc(g.lines, func(l line) bool { return strings.HasPrefix(l.text, "peer ") })
		if len(peers) > 0 {
			g.lines = append(g.lines, line{"peers " + Names(peers), "detail"})
		}
	}
	if len(merged) == 0 {
		return boxes
	}
	var out []*box
	done := map[*box]bool{}
	for _, b := range boxes {
		if g, ok := merged[b]; ok {
			if !done[g] {
				done[g] = true
				out = append(out, g)
			}
			continue
		}
		out = append(out, b)
	}
	for _, b := range out {
		var below []*box
		for _, d := range b.below {
			if g, ok := merged[d]; ok {
				d = g
			}
			if !slices.Contains(below, d) {
				below = append(below, d)
			}
		}
		b.below = below
	}
	return out
}

// signature is what a box says but its name and peer, and whether it may collapse at
// all: one with an address, an LLDP neighbour or drift of its own does not.
func signature(b *box) (string, bool) {
	if b.drift || len(b.lines) < 2 {
		return "", false
	}
	parts := []string{string(b.typ)}
	for _, l := range b.lines[1:] {
		switch {
		case strings.HasPrefix(l.text, "peer "):
		case l.class == "detail" && l != b.lines[1]:
			return "", false // an address or a neighbour
		default:
			parts = append(parts, l.text)
		}
	}
	return strings.Join(parts, "|"), true
}

// Names says a set of interface names briefly: names alike but for one number as a range
// (ens1f0v0–63, veth0–19a), and a long list cut with a count.
func Names(names []string) string {
	type shape struct{ prefix, suffix string }
	byShape := map[shape][]int{}
	var shapes []shape
	var rest []string
	for _, n := range names {
		end := len(n)
		for end > 0 && (n[end-1] < '0' || n[end-1] > '9') {
			end--
		}
		start := end
		for start > 0 && n[start-1] >= '0' && n[start-1] <= '9' {
			start--
		}
		num, err := strconv.Atoi(n[start:end])
		if start == end || err != nil || (end-start > 1 && n[start] == '0') {
			rest = append(rest, n)
			continue
		}
		sh := shape{n[:start], n[end:]}
		if _, ok := byShape[sh]; !ok {
			shapes = append(shapes, sh)
		}
		byShape[sh] = append(byShape[sh], num)
	}
	var parts []string
	for _, sh := range shapes {
		nums := byShape[sh]
		slices.Sort(nums)
		var runs []string
		for i := 0; i < len(nums); {
			j := i
			for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
				j++
			}
			if j > i {
				runs = append(runs, fmt.Sprintf("%d–%d", nums[i], nums[j]))
			} else {
				runs = append(runs, strconv.Itoa(nums[i]))
			}
			i = j + 1
		}
		if len(runs) > 3 {
			runs = append(runs[:2], fmt.Sprintf("… (%d)", len(nums)))
		}
		parts = append(parts, sh.prefix+strings.Join(runs, ",")+sh.suffix)
	}
	slices.Sort(rest)
	if len(rest) > 3 {
		rest = append(rest[:2], fmt.Sprintf("… +%d", len(rest)-2))
	}
	return strings.Join(append(parts, rest...), ", ")
}

// size is a box's width and height from its lines.
func size(b *box) (float64, float64) {
	longest := 0
	for _, l := range b.lines {
		longest = max(longest, min(utf8.RuneCountInString(l.text), maxChars))
	}
	return float64(longest)*charWidth + 2*padding, float64(len(b.lines))*lineHeight + 2*padding
}

// natural orders names with their numbers as numbers (eth2 before eth10).
func natural(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return cmp.Compare(na, nb)
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}
