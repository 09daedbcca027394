package serving

import (
	"flag"
	"io"
	"strconv"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// DebugVerbosity is the --v the NMState's logLevel debug gives the daemons: client-go's
// and leader election's debug lines start at 4, as Kubernetes' own components log them.
const DebugVerbosity = 4

// Logging binds a daemon's log flags to fs: controller-runtime's --zap-* and --v. The
// setup it returns, called after fs is parsed, gives controller-runtime's logger and klog
// (client-go, leader election, the work queues) one JSON sink at one verbosity: --v sets
// klog's, and controller-runtime's debug level unless --zap-log-level is given, which then
// bounds both.
func Logging(fs *flag.FlagSet) (setup func()) {
	set := logging(fs, nil)
	return func() { ctrl.SetLogger(set()) }
}

// logging binds the flags; its setup sets klog's logger and returns controller-runtime's
// (which a process sets once).
func logging(fs *flag.FlagSet, dest io.Writer) func() logr.Logger {
	opts := zap.Options{DestWriter: dest}
	opts.BindFlags(fs)
	v := fs.Int("v", 0, "log verbosity: 0 logs decisions and errors, "+strconv.Itoa(DebugVerbosity)+
		" what repeats and client-go's and leader election's debug lines (the NMState's logLevel: debug)")
	return func() logr.Logger {
		if opts.Level == nil && *v > 0 {
			opts.Level = zapcore.Level(-*v) // logr's V(n) is zap's level -n
		}
		logger := zap.New(zap.UseFlagOptions(&opts))
		klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(klogFlags)
		_ = klogFlags.Set("v", strconv.Itoa(*v))
		klog.SetLogger(logger.WithName("klog"))
		return logger
	}
}
