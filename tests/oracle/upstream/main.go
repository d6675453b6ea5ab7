// Command oracle runs the real upstream kube-scheduler (k8s.io/kubernetes v1.37.2, default profile,
// default feature gates) on a cluster given as Kubernetes manifests and prints what it decided as
// JSON. It is the reference `podsched simulate` is compared against.
//
//	oracle -f cluster.yaml -f workload.yaml      one cluster, one JSON object on stdout
//	oracle -batch < clusters.jsonl               one JSON line in, one JSON line out, per cluster
//
// Files are applied in order, as `podsched simulate -f ... -f ...` does: after each file the
// scheduler runs (on a simulated clock) until nothing changes. Bad input: a message naming the
// file, object and field on stderr (batch: in the line's "error"), exit code 2.
//
//go:debug randseednop=0
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// batchInput is one line of -batch input: the texts of the files, in order.
type batchInput struct {
	ID    string   `json:"id"`
	Files []string `json:"files"`
	Seed  *int64   `json:"seed,omitempty"`
	// FeatureGates for this cluster (e.g. {"GenericWorkload": true}); absent: -feature-gates.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

// batchError is the output line of a cluster that could not be run.
type batchError struct {
	ID       string `json:"id"`
	Upstream string `json:"upstream"`
	Error    string `json:"error"`
	BadInput bool   `json:"badInput"`
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oracle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files fileList
	fs.Var(&files, "f", "manifest file (YAML, multi-document, JSON or kind: List; - for stdin); repeatable, applied in order")
	batch := fs.Bool("batch", false, `read {"id": ..., "files": ["<yaml>", ...]} lines on stdin, write one result line per input line`)
	verbosity := fs.Int("v", -1, "scheduler log verbosity on stderr (default: no scheduler logs)")
	seed := fs.Int64("seed", 1, "1: nodes created in file order; other values shuffle each file's nodes with this seed, "+
		"which changes which of equally scored nodes upstream picks; also seeds math/rand (batch: a line's \"seed\" wins)")
	gateFlag := fs.String("feature-gates", "", "comma-separated Name=true|false, as kube-scheduler's --feature-gates "+
		"(the oracle takes "+strings.Join(supportedGateNames(), ", ")+"); batch: a line's \"featureGates\" wins")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "oracle: unexpected argument %q (files are given with -f)\n", fs.Arg(0))
		return 2
	}
	gates, err := parseFeatureGates(*gateFlag)
	if err != nil {
		fmt.Fprintf(stderr, "oracle: -feature-gates: %v\n", err)
		return 2
	}
	setupLogging(*verbosity)
	if *batch {
		if len(files) > 0 {
			fmt.Fprintln(stderr, "oracle: -batch reads the clusters from stdin; it takes no -f")
			return 2
		}
		return runBatch(stdin, stdout, stderr, *seed, gates)
	}
	if len(files) == 0 {
		fmt.Fprintln(stderr, "oracle: no input: give one or more -f FILE (or -batch)")
		return 2
	}
	var named []namedFile
	for _, name := range files {
		var data []byte
		var err error
		if name == "-" {
			data, err = io.ReadAll(stdin)
		} else {
			data, err = os.ReadFile(name)
		}
		if err != nil {
			fmt.Fprintf(stderr, "oracle: %v\n", err)
			return 2
		}
		named = append(named, namedFile{name: name, data: data})
	}
	res, err := runFiles(context.Background(), named, *seed, gates)
	if err != nil {
		fmt.Fprintf(stderr, "oracle: %v\n", err)
		return exitCode(err)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(stderr, "oracle: %v\n", err)
		return 1
	}
	return 0
}

func exitCode(err error) int {
	var bad *inputError
	if errors.As(err, &bad) {
		return 2
	}
	return 1
}

// runBatch runs each line's cluster on a fresh clientset and scheduler (each torn down before the
// next: contexts cancelled, informers shut down, watches stopped). A bad cluster gives an error
// line and the batch goes on; a bad line (not JSON) ends it with exit code 2.
func runBatch(stdin io.Reader, stdout, stderr io.Writer, seed int64, gates map[string]bool) int {
	scanner := bufio.NewScanner(stdin)
	scanner.Buffer(make([]byte, 1<<20), 1<<30)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	for lineNo := 1; scanner.Scan(); lineNo++ {
		line := strings.TrimSpace(scanner.Text())
		if line == "" {
			continue
		}
		var in batchInput
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			fmt.Fprintf(stderr, "oracle: stdin line %d: %v\n", lineNo, err)
			return 2
		}
		named := make([]namedFile, len(in.Files))
		for i, text := range in.Files {
			named[i] = namedFile{name: fmt.Sprintf("%s files[%d]", in.ID, i), data: []byte(text)}
		}
		lineSeed := seed
		if in.Seed != nil {
			lineSeed = *in.Seed
		}
		lineGates := gates
		if in.FeatureGates != nil {
			lineGates = in.FeatureGates
		}
		res, err := runFiles(context.Background(), named, lineSeed, lineGates)
		var line2 any
		if err != nil {
			line2 = batchError{ID: in.ID, Upstream: upstreamVersion, Error: err.Error(), BadInput: exitCode(err) == 2}
		} else {
			res.ID = in.ID
			line2 = res
		}
		if err := enc.Encode(line2); err != nil {
			fmt.Fprintf(stderr, "oracle: %v\n", err)
			return 1
		}
		if err := out.Flush(); err != nil {
			return 1
		}
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintf(stderr, "oracle: reading stdin: %v\n", err)
		return 2
	}
	return 0
}

func setupLogging(verbosity int) {
	if verbosity < 0 {
		// The scheduler logs errors it recovers from (a conflict, a pod already gone); the oracle
		// reports decisions, not logs.
		klog.SetLogger(logr.Discard())
		return
	}
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", fmt.Sprint(verbosity))
	_ = fs.Set("logtostderr", "true")
}
