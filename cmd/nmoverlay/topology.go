package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/nmoverlay/nmoverlay/api/shared"
	"github.com/nmoverlay/nmoverlay/api/v1beta1"
	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/topology"
)

const topologyAbout = `Draws a node's network from its NodeNetworkState: each interface a box, built left to
right from what it stands on (a bond's ports before it, a VLAN after its base, an Open
vSwitch bridge after its ports and bonds, a VRF after the interfaces it holds), with its
state, MTU, addresses, LLDP neighbour and veth peer, the policies that state it, the
drift its NodeNetworkState reports, and whether its profile is the persistent one or the
policies' in tmpfs (dashed). Alike siblings (VFs, veths) collapse into one box.

-o FILE.svg writes the picture, -o FILE.html a page with it; with neither, the SVG goes
to standard output. --all draws every node on one HTML page. It reads, with the
administrator's kubeconfig, the NodeNetworkStates and the enactments, and writes nothing
to the cluster.`

// runTopology is `nmoverlay topology [--kubeconfig FILE] [-o FILE.svg|FILE.html] NODE|--all`.
func runTopology(args []string, stdout, stderr io.Writer) int {
	const name = "nmoverlay topology"
	fset := flag.NewFlagSet(name, flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	kubeconfig := fset.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	output := fset.String("o", "", "FILE.svg or FILE.html (default: the SVG on standard output)")
	all := fset.Bool("all", false, "every node, on one HTML page")
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, name+": "+format+"\n", a...)
		return exitError
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s [--kubeconfig FILE] [-o FILE.svg|FILE.html] NODE|--all\n\n%s\n", name, topologyAbout)
			return exitOK
		}
		return fail("%v (see %s -h)", err, name)
	}
	ext := filepath.Ext(*output)
	switch {
	case *all == (fset.NArg() == 1) || fset.NArg() > 1:
		return fail("one NODE, or --all (see %s -h)", name)
	case *output != "" && ext != ".svg" && ext != ".html":
		return fail("-o %s: the file's name ends in .svg or .html", *output)
	case *all && ext == ".svg":
		return fail("--all draws one HTML page: -o FILE.html")
	}
	_, c, err := adminClient(*kubeconfig)
	if err != nil {
		return fail("%v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var nodes []topology.Node
	if *all {
		states := &v1beta1.NodeNetworkStateList{}
		if err := c.List(ctx, states); err != nil {
			return fail("listing the NodeNetworkStates (is nmoverlay installed?): %v", err)
		}
		slices.SortFunc(states.Items, func(a, b v1beta1.NodeNetworkState) int { return strings.Compare(a.Name, b.Name) })
		for i := range states.Items {
			n, err := topologyNode(ctx, c, &states.Items[i])
			if err != nil {
				return fail("%v", err)
			}
			nodes = append(nodes, n)
		}
		if len(nodes) == 0 {
			return fail("no NodeNetworkState in the cluster")
		}
	} else {
		nns := &v1beta1.NodeNetworkState{}
		switch err := c.Get(ctx, client.ObjectKey{Name: fset.Arg(0)}, nns); {
		case apierrors.IsNotFound(err):
			return fail("no NodeNetworkState %s: no such node, or its handler has not reported its state yet", fset.Arg(0))
		case err != nil:
			return fail("reading the NodeNetworkState of %s: %v", fset.Arg(0), err)
		}
		n, err := topologyNode(ctx, c, nns)
		if err != nil {
			return fail("%v", err)
		}
		nodes = append(nodes, n)
	}
	var out bytes.Buffer
	if *all || ext == ".html" {
		err = topology.HTML(&out, nodes)
	} else {
		err = topology.SVG(&out, nodes[0])
	}
	if err == nil && *output != "" {
		err = atomicfile.Write(*output, out.Bytes(), 0o644)
	} else if err == nil {
		_, err = stdout.Write(out.Bytes())
	}
	if err != nil {
		return fail("%v", err)
	}
	return exitOK
}

// topologyNode is what the picture shows of the node of nns, with its enactments.
func topologyNode(ctx context.Context, c client.Client, nns *v1beta1.NodeNetworkState) (topology.Node, error) {
	enactments := &v1beta1.NodeNetworkConfigurationEnactmentList{}
	if err := c.List(ctx, enactments, client.MatchingLabels{shared.NodeLabel: nns.Name}); err != nil {
		return topology.Node{}, fmt.Errorf("listing the enactments of %s: %v", nns.Name, err)
	}
	return topology.FromStatus(nns, enactments.Items)
}
