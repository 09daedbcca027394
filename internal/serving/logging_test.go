package serving

import (
	"bytes"
	"encoding/json"
	"flag"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// klog's lines (client-go's, leader election's) and controller-runtime's come out as one
// JSON format in one sink, at the verbosity --v gives both.
func TestLogging(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // messages logged, in order
	}{
		{nil, []string{"klog info", "logr info"}},
		{[]string{"--v=4"}, []string{"klog info", "klog v4", "logr info", "logr v4"}},
		{[]string{"--v=2"}, []string{"klog info", "logr info"}},
		// --zap-log-level, given, bounds both: klog writes through the same logger.
		{[]string{"--v=4", "--zap-log-level=info"}, []string{"klog info", "logr info"}},
	} {
		var buf bytes.Buffer
		fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
		setup := logging(fs, &buf)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		logger := setup()
		klog.Info("klog info")
		klog.V(4).Info("klog v4")
		klog.Flush()
		logger.Info("logr info")
		logger.V(4).Info("logr v4")
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("%v: not one JSON format: %q", tc.args, line)
			}
			got = append(got, entry["msg"].(string))
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%v: logged %q, want %q", tc.args, got, tc.want)
		}
	}
}
