package queue

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// ErrInsecureListen is returned by StartServer for a non-loopback listen
// address without authentication.
var ErrInsecureListen = errors.New("queue: refusing to listen on a non-loopback address without authentication (set a token, a user and password, or NKeys)")

// Auth is the authentication an embedded server requires of its clients.
// The zero value requires none, which StartServer allows on loopback only.
// Its kinds combine: a server may admit a token, a user and NKeys at once.
// With ServerConfig.Queue set, every one of them admits a client with a
// worker's permissions only; the process's own connections (Connect)
// present a key no client holds and keep every right.
type Auth struct {
	// Token is a shared secret clients present (nats.Token, NATS_URL's
	// "nats://TOKEN@host:port").
	Token string
	// User and Password admit one named user.
	User, Password string
	// NKeys are the public user NKeys ("U…") admitted; a client proves one
	// with the seed (nats.NkeyOptionFromSeed, a .nk file).
	NKeys []string
}

// NewToken returns a random token (128 bits, in hex, so that it can stand
// in a URL: nats://TOKEN@host:port).
func NewToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("queue: a token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

func (a Auth) set() bool { return a.Token != "" || a.User != "" || len(a.NKeys) > 0 }

func (a Auth) validate() error {
	if (a.User == "") != (a.Password == "") {
		return errors.New("queue: a user needs a password and a password a user")
	}
	for _, k := range a.NKeys {
		if !nkeys.IsValidPublicUserKey(k) {
			return fmt.Errorf("queue: %q is not a public user NKey (it starts with U)", k)
		}
	}
	return nil
}

// ServerConfig configures an embedded NATS server with JetStream.
type ServerConfig struct {
	// Dir holds JetStream's file store (required). A server restarted on
	// the same Dir finds its streams, consumers and buckets as they were.
	Dir string
	// Listen is the client address, host:port. Empty means 127.0.0.1 on a
	// free port; port 0 means a free port. A host that is not a loopback
	// address requires Auth.
	Listen string
	// Auth is what clients must present.
	Auth Auth
	// TLS, when set, makes the listener require TLS (recommended off
	// loopback).
	TLS *tls.Config
	// Name is the server's name (default "truss").
	Name string
	// Queue, when set, restricts every client Auth admits — by token,
	// user and password, or NKey — to what a worker of that queue needs
	// (WorkerPermissions). The process's own connections (Connect) keep
	// every right. Without Queue, Auth's clients have every right.
	Queue string
	// Logf, when set, receives the server's notices and errors.
	Logf func(format string, args ...any)
}

// Server is a NATS server with JetStream running in this process.
type Server struct {
	ns *server.Server
	// internal is the key the process's own connections present when
	// the server requires authentication: generated at start, held by
	// this process only, the one credential with every right.
	internal nkeys.KeyPair
}

// EmbeddedMaxPayload is the embedded server's largest message (NATS's
// default is 1 MiB).
const EmbeddedMaxPayload = 8 << 20

// StartServer starts an embedded NATS server with JetStream, its file
// store in cfg.Dir, and waits until it accepts connections or ctx ends.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("queue: the server needs a store directory")
	}
	if err := cfg.Auth.validate(); err != nil {
		return nil, err
	}
	host, port := "127.0.0.1", server.RANDOM_PORT
	if cfg.Listen != "" {
		h, p, err := net.SplitHostPort(cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("queue: listen address %q: %w", cfg.Listen, err)
		}
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return nil, fmt.Errorf("queue: listen address %q: bad port %q", cfg.Listen, p)
		}
		if n == 0 {
			n = server.RANDOM_PORT
		}
		host, port = h, n
		if !isLoopback(h) && !cfg.Auth.set() {
			return nil, fmt.Errorf("%w: %s", ErrInsecureListen, cfg.Listen)
		}
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("queue: store directory: %w", err)
	}
	name := cfg.Name
	if name == "" {
		name = "truss"
	}
	opts := &server.Options{
		ServerName: name,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.Dir,
		NoSigs:     true,
		NoLog:      cfg.Logf == nil,
		// Files of a stopped process survive in the page cache; a crash
		// of the machine loses at most the last sync interval, which the
		// coordinator's resume covers by republishing.
		SyncInterval: 10 * time.Second,
		// A job carries its task's test patch and, when grading, the
		// prediction: generated files and lock files pass NATS's 1 MiB
		// default. 8 MiB is the most NATS advises.
		MaxPayload: EmbeddedMaxPayload,
	}
	s := &Server{}
	if cfg.Auth.set() {
		var perms *server.Permissions
		if cfg.Queue != "" {
			if !nameRE.MatchString(cfg.Queue) {
				return nil, fmt.Errorf("queue: name %q: letters, digits, '-' and '_' only, at most 64", cfg.Queue)
			}
			perms = WorkerPermissions(cfg.Queue)
		}
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, fmt.Errorf("queue: internal NKey: %w", err)
		}
		s.internal = kp
		a, err := newAuthenticator(cfg.Auth, kp, perms)
		if err != nil {
			return nil, err
		}
		// The server's own token, user and NKey checks give a token or a
		// user every right; this one gives every kind of credential the
		// permissions asked for.
		opts.CustomClientAuthentication = a
		opts.AlwaysEnableNonce = true
	}
	if cfg.TLS != nil {
		opts.TLSConfig = cfg.TLS
		opts.TLS = true
		opts.TLSTimeout = 2
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("queue: nats server: %w", err)
	}
	if cfg.Logf != nil {
		ns.SetLoggerV2(logAdapter{cfg.Logf}, false, false, false)
	}
	s.ns = ns
	ns.Start()
	for !ns.ReadyForConnections(50 * time.Millisecond) {
		if err := ctx.Err(); err != nil {
			ns.Shutdown()
			return nil, fmt.Errorf("queue: nats server did not start: %w", err)
		}
		if !ns.Running() {
			return nil, errors.New("queue: nats server stopped while starting (is the port taken or the store locked?)")
		}
	}
	return s, nil
}

// WorkerPermissions are what a worker of the queue name needs, and
// nothing more: pull jobs from the workers' consumer and acknowledge them
// (heartbeats, hand-backs), publish results and uploads (a large ledger),
// read the queue's settings, read and write the advisory status entries
// (`truss bench status` reads them with a worker's credentials), and read
// the coordinator's artifacts (repository bundles). A worker cannot
// publish or remove jobs, write the server's advisories, write, replace
// or remove an artifact, read an upload (its own or another's), create,
// change, purge or delete a stream or a consumer of any kind, nor read
// the results. It reads the status entries and the artifacts with direct
// gets: a consumer it could create would deliver where its creator asks,
// which no subject permission checks.
func WorkerPermissions(name string) *server.Permissions {
	jobs, kv, obj := "TRUSS_"+name+"_JOBS", "KV_TRUSS_"+name+"_STATUS", "OBJ_TRUSS_"+name+"_ARTIFACTS"
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{
			"truss." + name + ".results",
			"truss." + name + ".uploads.*",
			"$JS.API.INFO",
			"$JS.API.STREAM.NAMES",
			"$JS.API.STREAM.INFO." + jobs,
			"$JS.API.CONSUMER.INFO." + jobs + "." + consumerName,
			"$JS.API.CONSUMER.MSG.NEXT." + jobs + "." + consumerName,
			"$JS.ACK." + jobs + "." + consumerName + ".>",
			"$KV.TRUSS_" + name + "_STATUS.>",
			"$JS.API.STREAM.INFO." + kv,
			"$JS.API.DIRECT.GET." + kv,
			"$JS.API.DIRECT.GET." + kv + ".>",
			"$JS.API.STREAM.INFO." + obj,
			"$JS.API.DIRECT.GET." + obj,
			"$JS.API.DIRECT.GET." + obj + ".>",
		}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
	}
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the address clients on the network connect to, without
// credentials (nats://127.0.0.1:PORT).
func (s *Server) URL() string { return s.ns.ClientURL() }

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ns.Addr() }

// Connect opens an in-process connection to the server (no socket). It
// presents the process's own key, so it has every right whatever the
// permissions of the clients Auth admits.
func (s *Server) Connect(name string) (*nats.Conn, error) {
	opts := []nats.Option{nats.InProcessServer(s.ns), nats.Name(name), nats.MaxReconnects(-1)}
	if s.internal != nil {
		pub, _ := s.internal.PublicKey()
		opts = append(opts, nats.Nkey(pub, s.internal.Sign))
	}
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("queue: connect in process: %w", err)
	}
	return nc, nil
}

// Shutdown stops the server and waits until it has.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}

type logAdapter struct{ logf func(string, ...any) }

func (l logAdapter) Noticef(f string, v ...any) { l.logf("nats: "+f, v...) }
func (l logAdapter) Warnf(f string, v ...any)   { l.logf("nats warning: "+f, v...) }
func (l logAdapter) Fatalf(f string, v ...any)  { l.logf("nats fatal: "+f, v...) }
func (l logAdapter) Errorf(f string, v ...any)  { l.logf("nats error: "+f, v...) }
func (l logAdapter) Debugf(string, ...any)      {}
func (l logAdapter) Tracef(string, ...any)      {}
