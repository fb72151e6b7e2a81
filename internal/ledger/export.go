package ledger

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	intoto "github.com/in-toto/attestation/go/v1"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The in-toto export's types.
const (
	PayloadType = "application/vnd.in-toto+json"
	BuildType   = "https://truss.dev/agent-session/v1"
)

// PrivateKey reads the Ed25519 key of the installation's ledger key file
// (x/mod's format: PRIVATE+KEY+<name>+<hex id>+<base64 of 0x01 || seed>).
func PrivateKey(dir string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(filepath.Join(dir, "ledger.key"))
	if err != nil {
		return nil, fmt.Errorf("ledger key: %w", err)
	}
	parts := strings.SplitN(strings.TrimSpace(string(b)), "+", 5) // the base64 may hold "+"
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, errors.New("ledger key: not an x/mod note private key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return nil, errors.New("ledger key: not an Ed25519 key")
	}
	return ed25519.NewKeyFromSeed(raw[1:]), nil
}

// dsseKey adapts an Ed25519 key to DSSE's signer and verifier.
type dsseKey struct {
	id   string
	priv ed25519.PrivateKey
	pub  ed25519.PublicKey
}

func (k dsseKey) Sign(_ context.Context, data []byte) ([]byte, error) {
	return ed25519.Sign(k.priv, data), nil
}
func (k dsseKey) KeyID() (string, error)   { return k.id, nil }
func (k dsseKey) Public() crypto.PublicKey { return k.pub }
func (k dsseKey) Verify(_ context.Context, data, sig []byte) error {
	if !ed25519.Verify(k.pub, data, sig) {
		return errors.New("bad signature")
	}
	return nil
}

// Export verifies the ledger and returns an in-toto Statement v1 with an
// SLSA Provenance v1 predicate, in a DSSE envelope signed with priv (keyid:
// vkey). The subjects are the files the session left, by digest (or, when
// it changed none, the last checkpoint); the last checkpoint is a byproduct.
func Export(dir, vkey string, priv ed25519.PrivateKey) ([]byte, error) {
	r, entries, err := Verify(dir, vkey)
	if err != nil {
		return nil, fmt.Errorf("the ledger does not verify: %w", err)
	}
	cp, err := os.ReadFile(filepath.Join(dir, "checkpoints", fmt.Sprintf("%020d", r.Sealed)))
	if err != nil {
		return nil, err
	}
	cpSum := sha256.Sum256(cp)
	var start, end map[string]any
	for _, e := range entries {
		switch e.Type {
		case "session.start":
			start, _ = e.Data.(map[string]any)
		case "session.end":
			end, _ = e.Data.(map[string]any)
		}
	}
	var subjects []*intoto.ResourceDescriptor
	if files, ok := end["files"].(map[string]any); ok {
		var names []string
		for n := range files {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if d, _ := files[n].(string); d != "" {
				subjects = append(subjects, &intoto.ResourceDescriptor{Name: n, Digest: map[string]string{"sha256": d}})
			}
		}
	}
	cpDesc := &intoto.ResourceDescriptor{Name: "ledger-checkpoint", Digest: map[string]string{"sha256": hex.EncodeToString(cpSum[:])},
		Content: cp, MediaType: "text/plain; charset=utf-8"}
	if len(subjects) == 0 {
		subjects = []*intoto.ResourceDescriptor{{Name: "ledger-checkpoint", Digest: cpDesc.Digest}}
	}
	ext, err := structpb.NewStruct(map[string]any{"provider": start["provider"], "model": start["model"], "surface": start["surface"],
		"sandbox": start["sandbox"], "workspace": start["workspace"], "session": r.Session, "ledger_origin": r.Origin})
	if err != nil {
		return nil, err
	}
	bd := &slsa.BuildDefinition{BuildType: BuildType, ExternalParameters: ext}
	if repo, ok := start["repo"].(map[string]any); ok {
		if head, _ := repo["head"].(string); len(head) == 40 {
			bd.ResolvedDependencies = []*intoto.ResourceDescriptor{{Name: "workspace", Digest: map[string]string{"gitCommit": head}}}
		}
	}
	meta := &slsa.BuildMetadata{InvocationId: r.Session}
	if t, err := time.Parse(time.RFC3339Nano, entries[0].Time); err == nil {
		meta.StartedOn = timestamppb.New(t)
	}
	if t, err := time.Parse(time.RFC3339Nano, entries[len(entries)-1].Time); err == nil {
		meta.FinishedOn = timestamppb.New(t)
	}
	truss, _ := start["truss"].(string)
	prov := &slsa.Provenance{BuildDefinition: bd, RunDetails: &slsa.RunDetails{
		Builder:    &slsa.Builder{Id: "https://truss.dev/truss", Version: map[string]string{"truss": truss}},
		Metadata:   meta,
		Byproducts: []*intoto.ResourceDescriptor{cpDesc},
	}}
	if err := prov.Validate(); err != nil {
		return nil, fmt.Errorf("provenance: %w", err)
	}
	pj, err := protojson.Marshal(prov)
	if err != nil {
		return nil, err
	}
	pred := &structpb.Struct{}
	if err := protojson.Unmarshal(pj, pred); err != nil {
		return nil, err
	}
	st := &intoto.Statement{Type: intoto.StatementTypeUri, Subject: subjects, PredicateType: "https://slsa.dev/provenance/v1", Predicate: pred}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("statement: %w", err)
	}
	body, err := protojson.Marshal(st)
	if err != nil {
		return nil, err
	}
	k := dsseKey{id: vkey, priv: priv, pub: priv.Public().(ed25519.PublicKey)}
	signer, err := dsse.NewEnvelopeSigner(k)
	if err != nil {
		return nil, err
	}
	env, err := signer.SignPayload(context.Background(), PayloadType, body)
	if err != nil {
		return nil, err
	}
	return json.MarshalIndent(env, "", "  ")
}

// VerifyExport checks a DSSE envelope from Export against the public key
// whose key id is vkey.
func VerifyExport(envJSON []byte, vkey string, pub ed25519.PublicKey) (*intoto.Statement, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envJSON, &env); err != nil {
		return nil, err
	}
	v, err := dsse.NewEnvelopeVerifier(dsseKey{id: vkey, pub: pub})
	if err != nil {
		return nil, err
	}
	if _, err := v.Verify(context.Background(), &env); err != nil {
		return nil, err
	}
	body, err := env.DecodeB64Payload()
	if err != nil {
		return nil, err
	}
	st := &intoto.Statement{}
	if err := protojson.Unmarshal(body, st); err != nil {
		return nil, err
	}
	return st, st.Validate()
}
