package nmdbus

import (
	"context"
	"net"
	"path/filepath"
	"testing"
)

// No bus yet is the helper's normal case before NetworkManager starts; a bus that does
// not answer properly must be an error, never "NetworkManager is not running".
func TestConnectIfRunningTellsMissingFromBroken(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "absent.sock"))
	if nm, err := ConnectIfRunning(context.Background()); nm != nil || err != nil {
		t.Fatalf("no bus socket: got %v, %v; want nil, nil", nm, err)
	}

	sock := filepath.Join(dir, "broken.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close() // a bus that hangs up during authentication
		}
	}()
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+sock)
	nm, err := ConnectIfRunning(context.Background())
	if err == nil {
		t.Fatalf("a bus that hangs up: got %v, nil; want an error", nm)
	}
	t.Log(err)
}
