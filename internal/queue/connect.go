package queue

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOptions are the credentials and settings for a connection to an
// existing NATS deployment.
type ConnectOptions struct {
	// Name identifies the client in the server's monitoring.
	Name string
	// CredsFile is a NATS credentials file: a user JWT with its NKey seed
	// (.creds, as `nsc` writes), or a bare NKey seed file (.nk).
	CredsFile string
	// Token, or User and Password, authenticate without a file. A URL of
	// the form nats://TOKEN@host or nats://USER:PASS@host works as well.
	Token          string
	User, Password string
	// CAFile is a PEM file of roots that verify a TLS server.
	CAFile string
	// ConnectTimeout bounds the first connection (default 5 s); once
	// connected, the client reconnects forever.
	ConnectTimeout time.Duration
}

// Connect opens a connection to the NATS deployment at url (several may
// be given, separated by commas, as NATS_URL allows). The connection
// reconnects without limit: a restarted server or a cluster's failover is
// waited out, not reported.
func Connect(ctx context.Context, url string, o ConnectOptions) (*nats.Conn, error) {
	if url == "" {
		return nil, errors.New("queue: no NATS URL")
	}
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) < timeout {
		timeout = time.Until(d)
	}
	opts := []nats.Option{
		nats.Name(o.Name),
		nats.Timeout(timeout),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, time.Second),
	}
	if o.CredsFile != "" {
		b, err := os.ReadFile(o.CredsFile)
		if err != nil {
			return nil, fmt.Errorf("queue: credentials: %w", err)
		}
		if bytes.Contains(b, []byte("BEGIN NATS USER JWT")) {
			opts = append(opts, nats.UserCredentials(o.CredsFile))
		} else {
			opt, err := nats.NkeyOptionFromSeed(o.CredsFile)
			if err != nil {
				return nil, fmt.Errorf("queue: credentials %s: neither a .creds file nor an NKey seed: %w", o.CredsFile, err)
			}
			opts = append(opts, opt)
		}
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("queue: connect to %s: %w", redactURL(url), err)
	}
	return nc, nil
}

// redactURL drops credentials from a URL, or a comma-separated list of
// them, for messages.
func redactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		scheme := strings.Index(p, "://")
		if scheme < 0 {
			continue
		}
		rest := p[scheme+3:]
		authority := rest
		if slash := strings.IndexByte(rest, '/'); slash >= 0 {
			authority = rest[:slash]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			parts[i] = p[:scheme+3] + "***" + rest[at:]
		}
	}
	return strings.Join(parts, ",")
}
