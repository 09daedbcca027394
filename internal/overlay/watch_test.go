package overlay

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nmoverlay/nmoverlay/internal/atomicfile"
	"github.com/nmoverlay/nmoverlay/internal/paths"
)

func TestWatchLowerSignalsAWrite(t *testing.T) {
	l := paths.Layout{Lower: t.TempDir(), RunDir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := WatchLower(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("signalled before anything changed")
	case <-time.After(100 * time.Millisecond):
	}
	if err := os.WriteFile(filepath.Join(l.Lower, "eth9.nmconnection"), []byte("[connection]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("a file written into the lower dir was not signalled")
	}
	cancel()
	for range ch { // closes once ctx ends
	}
}

func TestWatchMarkerSignalsOnlyTheMarker(t *testing.T) {
	l := paths.Layout{Lower: t.TempDir(), RunDir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	ch, err := WatchMarker(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(l.BootIDFile(), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
		t.Fatal("signalled for another file of the run dir")
	case <-time.After(200 * time.Millisecond):
	}
	if err := writeDegraded(l, Degraded{Reason: ReasonRestartPending}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the marker written was not signalled")
	}
	if err := os.Remove(l.DegradedMarker()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("the marker removed was not signalled")
	}
	cancel()
	for range ch {
	}
}

func TestInUseReportsALowerWrite(t *testing.T) {
	l := paths.Layout{Lower: t.TempDir(), RunDir: t.TempDir()}
	if why, err := InUse(l); why != ReasonNotSetUp || err != nil {
		t.Fatalf("before setup saved a manifest (no overlay on the node): %q, %v", why, err)
	}
	m, err := ReadManifest(l.Lower)
	if err != nil {
		t.Fatal(err)
	}
	if err := saveManifest(l.LowerManifest(), m); err != nil {
		t.Fatal(err)
	}
	if why, err := InUse(l); why != "" || err != nil {
		t.Fatalf("unchanged lower dir: %q, %v", why, err)
	}
	if err := os.WriteFile(filepath.Join(l.Lower, "eth9.nmconnection"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	why, err := InUse(l)
	if err != nil || why == "" || !strings.Contains(why, "added eth9.nmconnection") {
		t.Fatalf("after a write into the lower dir: %q, %v", why, err)
	}
}
