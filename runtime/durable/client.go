package durable

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"

	"github.com/debate-runner/runner/nodes/tools"
	"github.com/debate-runner/runner/runtime/rundir"
)

// Connect says how to reach a Temporal frontend.
type Connect struct {
	// Address is the frontend's HOST:PORT (a dev server's 127.0.0.1:7233,
	// or NAMESPACE.ACCOUNT.tmprl.cloud:7233).
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	// TLS connects with TLS (implied by the fields below); TLSCert and
	// TLSKey are a client certificate (mTLS), TLSCA the CA that signs the
	// server's, TLSServerName the name to check it against.
	TLS           bool   `json:"tls,omitempty"`
	TLSCert       string `json:"-"`
	TLSKey        string `json:"-"`
	TLSCA         string `json:"-"`
	TLSServerName string `json:"-"`
	// APIKey authenticates to Temporal Cloud (with TLS). Never written.
	APIKey string `json:"-"`
	// Log receives the SDK's warnings and errors; nil discards them.
	Log io.Writer `json:"-"`
}

// DataConverter is the payload encoding of runs: JSON, compressed, since
// prompts and replies make most of a run's history and the server bounds
// its size.
func DataConverter() converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), converter.NewZlibCodec(converter.ZlibCodecOptions{}))
}

// Dial connects to Temporal.
func Dial(ctx context.Context, o Connect) (client.Client, error) {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	w := o.Log
	if w == nil {
		w = io.Discard
	}
	opts := client.Options{
		HostPort: o.Address, Namespace: o.Namespace, DataConverter: DataConverter(),
		Logger: log.NewStructuredLogger(slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if o.TLS || o.TLSCert != "" || o.TLSCA != "" || o.APIKey != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.TLSServerName}
		if o.TLSCert != "" || o.TLSKey != "" {
			pair, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
			if err != nil {
				return nil, fmt.Errorf("TLS client certificate %s / key %s: %w", o.TLSCert, o.TLSKey, err)
			}
			cfg.Certificates = []tls.Certificate{pair}
		}
		if o.TLSCA != "" {
			pem, err := os.ReadFile(o.TLSCA)
			if err != nil {
				return nil, fmt.Errorf("TLS CA %s: %w", o.TLSCA, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("TLS CA %s holds no PEM certificate", o.TLSCA)
			}
			cfg.RootCAs = pool
		}
		opts.ConnectionOptions.TLS = cfg
	}
	if o.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(o.APIKey)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("connecting to Temporal at %s (namespace %s): %w", o.Address, o.Namespace, err)
	}
	return c, nil
}

// Record is temporal.json in a run (or sweep) directory: where the run is
// made, so that `runner resume` follows it again.
type Record struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	TaskQueue string `json:"task_queue"`
	// WorkflowID is the run's workflow (or the sweep's, in a sweep
	// directory).
	WorkflowID string `json:"workflow_id"`
	// Sweep is the sweep workflow a run belongs to.
	Sweep string `json:"sweep,omitempty"`
	// BuildID is the runner version the workflow is pinned to, whose
	// workers make it (StartOptions).
	BuildID string `json:"build_id,omitempty"`
	// ContextFile names the file in the run directory that holds the
	// snapshot of --context the workers answer file tools from, so that a
	// resumed client answers them alike even if the folder changed since.
	ContextFile string `json:"context_file,omitempty"`
}

// ContextFile is the name of the context snapshot in a run directory;
// the runs of a sweep share their sweep directory's (SweepContextFile).
const (
	ContextFile      = "temporal-context.json"
	SweepContextFile = "../" + ContextFile
)

// WriteContext writes snap to dir/ContextFile.
func WriteContext(dir string, snap *tools.Snapshot) error {
	return rundir.WriteJSON(filepath.Join(dir, ContextFile), snap)
}

// ReadContext reads the context snapshot rec names in dir; nil when the run
// was given no context.
func ReadContext(dir string, rec Record) (*tools.Snapshot, error) {
	if rec.ContextFile == "" {
		return nil, nil
	}
	// The run's own copy, or its sweep's one folder up: never elsewhere.
	if rec.ContextFile != ContextFile && rec.ContextFile != SweepContextFile {
		return nil, fmt.Errorf("%s: context_file %q is neither %s nor %s", filepath.Join(dir, RecordFile), rec.ContextFile, ContextFile, SweepContextFile)
	}
	path := filepath.Join(dir, filepath.FromSlash(rec.ContextFile))
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the snapshot of the run's context folder: %w", err)
	}
	var snap tools.Snapshot
	if err := json.Unmarshal(data, &snap); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &snap, nil
}

// RecordFile is the name of a Record in a run directory.
const RecordFile = "temporal.json"

// WriteRecord writes dir/temporal.json.
func WriteRecord(dir string, rec Record) error {
	return rundir.WriteJSON(filepath.Join(dir, RecordFile), rec)
}

// ReadRecord reads dir/temporal.json; false when the run was made locally.
func ReadRecord(dir string) (Record, bool, error) {
	var rec Record
	data, err := os.ReadFile(filepath.Join(dir, RecordFile))
	if errors.Is(err, os.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := json.Unmarshal(data, &rec); err != nil {
		return rec, false, fmt.Errorf("%s: %w", filepath.Join(dir, RecordFile), err)
	}
	return rec, true, nil
}
