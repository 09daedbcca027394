package topology

import (
	"fmt"
	"html"
	"io"
	"strings"
)

// headerHeight is the room above the boxes for the node's name and what it says.
const headerHeight = 3*lineHeight + padding

// style is the picture's: a box's border says its state (green up, grey down), dashed
// when its profile is in tmpfs (the policies', re-applied after each boot), red with
// drift; a policy's line is blue, drift red.
const style = `
.iface rect { fill: #fff; stroke: #2e7d32; stroke-width: 1.5; }
.iface.down rect { stroke: #9e9e9e; fill: #f5f5f5; }
.iface.tmpfs rect { stroke-dasharray: 5 3; }
.iface.drift rect { stroke: #c62828; stroke-width: 2.5; }
.name { font-weight: bold; }
.detail { fill: #424242; }
text.policy { fill: #1565c0; }
text.drift, .iface.drift .name { fill: #c62828; }
.edge { fill: none; stroke: #90a4ae; stroke-width: 1.2; }
.head { font-weight: bold; font-size: 14px; }
.about { fill: #616161; }
`

// SVG writes the picture of n's network as a standalone SVG document.
func SVG(w io.Writer, n Node) error {
	boxes, width, height := layout(graph(n))
	width = max(width, float64(len(legend))*charWidth) + 2*padding
	height += headerHeight + padding
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" `+
		`font-family="DejaVu Sans Mono, Liberation Mono, monospace" font-size="%d" data-node="%s">`+"\n",
		width, height, width, height, fontSize, esc(n.Name))
	fmt.Fprintf(&b, "<style>%s</style>\n", style)
	fmt.Fprintf(&b, `<text class="head" x="%d" y="%d">%s</text>`+"\n", padding, lineHeight, esc(n.Name))
	about := n.About
	if n.Summarized != "" {
		about += " · summarized: " + n.Summarized
	}
	fmt.Fprintf(&b, `<text class="about" x="%d" y="%d">%s</text>`+"\n", padding, 2*lineHeight, esc(cut(about, 2*maxChars)))
	fmt.Fprintf(&b, `<text class="about" x="%d" y="%d">%s</text>`+"\n", padding, 3*lineHeight, esc(legend))
	fmt.Fprintf(&b, `<g transform="translate(%d,%d)">`+"\n", padding, headerHeight)
	for _, bx := range boxes {
		for _, d := range bx.below {
			x1, y1 := d.x+d.w, d.y+d.h/2
			x2, y2 := bx.x, bx.y+bx.h/2
			mid := (x1 + x2) / 2
			fmt.Fprintf(&b, `<path class="edge" d="M%.1f,%.1f C%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`+"\n", x1, y1, mid, y1, mid, y2, x2, y2)
		}
	}
	for _, bx := range boxes {
		class := "iface"
		if bx.state != "up" {
			class += " down"
		}
		if !bx.persistent {
			class += " tmpfs"
		}
		if bx.drift {
			class += " drift"
		}
		var title []string
		title = append(title, strings.Join(bx.names, " "))
		for _, l := range bx.lines[1:] {
			title = append(title, l.text)
		}
		fmt.Fprintf(&b, `<g class="%s" data-names="%s"><title>%s</title>`, class, esc(strings.Join(bx.names, " ")), esc(strings.Join(title, "\n")))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="4"/>`, bx.x, bx.y, bx.w, bx.h)
		for i, l := range bx.lines {
			fmt.Fprintf(&b, `<text class="%s" x="%.1f" y="%.1f">%s</text>`, l.class, bx.x+padding, bx.y+padding+float64(i+1)*lineHeight-3, esc(cut(l.text, maxChars)))
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</g>\n</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

const legend = "left to right: ports and bases first · green up, grey down · dashed: tmpfs (the policies') · red: drift"

// HTML writes one page with the pictures of nodes, one after the other.
func HTML(w io.Writer, nodes []Node) error {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>nmoverlay topology</title>\n")
	b.WriteString("<style>body { font-family: sans-serif; margin: 16px; } section { margin-bottom: 32px; overflow-x: auto; } nav a { margin-right: 12px; }</style>\n")
	b.WriteString("</head><body>\n")
	if len(nodes) > 1 {
		b.WriteString("<nav>")
		for _, n := range nodes {
			fmt.Fprintf(&b, `<a href="#%s">%s</a>`, esc(n.Name), esc(n.Name))
		}
		b.WriteString("</nav>\n")
	}
	for _, n := range nodes {
		fmt.Fprintf(&b, `<section id="%s">`+"\n", esc(n.Name))
		if err := SVG(&b, n); err != nil {
			return err
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string { return html.EscapeString(s) }

// cut shortens s to n characters, ending it with an ellipsis.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
