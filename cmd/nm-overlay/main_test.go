package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUsageErrors(t *testing.T) {
	badLayout := filepath.Join(t.TempDir(), "layout.json")
	if err := os.WriteFile(badLayout, []byte(`{"lower":"/etc/NetworkManager/system-connections","runDir":"/tmp/x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "Usage"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"verify", "-o", "yaml"}, `-o "yaml": want text or json`},
		{[]string{"setup", "--layout", badLayout}, `runDir: "/tmp/x" is under /tmp`},
		{[]string{"status", "--no-such-flag"}, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tc.args, &stdout, &stderr)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d", tc.args, code, exitUsage)
		}
		if got := stdout.String() + stderr.String(); !strings.Contains(got, tc.want) {
			t.Errorf("%v: output %q, want %q", tc.args, got, tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "reset") {
		t.Errorf("help: exit %d, %q", code, stdout.String())
	}
}
