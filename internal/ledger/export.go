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
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"
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

// The in-toto Statement v1 and SLSA Provenance v1 documents, as plain JSON.
// (The in-toto library's Go types are protobuf messages, and linking
// protobuf disables the linker's removal of unused methods for the whole
// binary; the tests check these documents with that library.)
type (
	statement struct {
		Type          string               `json:"_type"`
		Subject       []resourceDescriptor `json:"subject"`
		PredicateType string               `json:"predicateType"`
		Predicate     provenance           `json:"predicate"`
	}
	resourceDescriptor struct {
		Name      string            `json:"name,omitempty"`
		Digest    map[string]string `json:"digest,omitempty"`
		Content   []byte            `json:"content,omitempty"`
		MediaType string            `json:"mediaType,omitempty"`
	}
	provenance struct {
		BuildDefinition buildDefinition `json:"buildDefinition"`
		RunDetails      runDetails      `json:"runDetails"`
	}
	buildDefinition struct {
		BuildType            string               `json:"buildType"`
		ExternalParameters   map[string]any       `json:"externalParameters"`
		ResolvedDependencies []resourceDescriptor `json:"resolvedDependencies,omitempty"`
	}
	runDetails struct {
		Builder    builder              `json:"builder"`
		Metadata   buildMetadata        `json:"metadata"`
		Byproducts []resourceDescriptor `json:"byproducts,omitempty"`
	}
	builder struct {
		ID      string            `json:"id"`
		Version map[string]string `json:"version,omitempty"`
	}
	buildMetadata struct {
		InvocationID string `json:"invocationId"`
		StartedOn    string `json:"startedOn,omitempty"`
		FinishedOn   string `json:"finishedOn,omitempty"`
	}
)

// Statement types.
const (
	StatementType  = "https://in-toto.io/Statement/v1"
	ProvenanceType = "https://slsa.dev/provenance/v1"
)

// Export verifies the ledger and returns an in-toto Statement v1 with an
// SLSA Provenance v1 predicate, in a DSSE envelope signed with priv (keyid:
// vkey). The subjects are the files the session left, by digest and by
// their names as the ledger records them (EncodeName), or, when it changed
// none, the last checkpoint; the last checkpoint is a byproduct.
// Only sealed entries are read: an unsealed tail, which no signature
// covers, is not evidence of what the session did (a session.end in it is
// not taken as the session's).
func Export(dir, vkey string, priv ed25519.PrivateKey) ([]byte, error) {
	r, entries, err := Verify(dir, vkey)
	if err != nil {
		return nil, fmt.Errorf("the ledger does not verify: %w", err)
	}
	entries = entries[:r.Sealed]
	if len(entries) == 0 {
		return nil, errors.New("the ledger has no sealed entry")
	}
	cp := r.Checkpoint
	cpSum := sha256.Sum256(cp)
	var start map[string]any
	var end *Entry
	for i, e := range entries {
		switch e.Type {
		case "session.start":
			start, _ = e.Data.(map[string]any)
		case "session.end":
			end = &entries[i]
		}
	}
	var subjects []resourceDescriptor
	if end != nil {
		files, err := FinalFiles(dir, *end)
		if err != nil {
			return nil, err
		}
		for _, n := range slices.Sorted(maps.Keys(files)) {
			if d := files[n]; len(d) == 64 {
				subjects = append(subjects, resourceDescriptor{Name: EncodeName(n), Digest: map[string]string{"sha256": d}})
			}
		}
	}
	cpDesc := resourceDescriptor{Name: "ledger-checkpoint", Digest: map[string]string{"sha256": hex.EncodeToString(cpSum[:])},
		Content: cp, MediaType: "text/plain; charset=utf-8"}
	if len(subjects) == 0 {
		subjects = []resourceDescriptor{{Name: "ledger-checkpoint", Digest: cpDesc.Digest}}
	}
	bd := buildDefinition{BuildType: BuildType, ExternalParameters: map[string]any{"provider": start["provider"], "model": start["model"],
		"surface": start["surface"], "sandbox": start["sandbox"], "workspace": start["workspace"], "session": r.Session, "ledger_origin": r.Origin}}
	if repo, ok := start["repo"].(map[string]any); ok {
		if head, _ := repo["head"].(string); len(head) == 40 {
			bd.ResolvedDependencies = []resourceDescriptor{{Name: "workspace", Digest: map[string]string{"gitCommit": head}}}
		}
	}
	truss, _ := start["truss"].(string)
	st := statement{Type: StatementType, Subject: subjects, PredicateType: ProvenanceType, Predicate: provenance{
		BuildDefinition: bd,
		RunDetails: runDetails{
			Builder:    builder{ID: "https://truss.dev/truss", Version: map[string]string{"truss": truss}},
			Metadata:   buildMetadata{InvocationID: r.Session, StartedOn: entries[0].Time, FinishedOn: entries[len(entries)-1].Time},
			Byproducts: []resourceDescriptor{cpDesc},
		},
	}}
	body, err := json.Marshal(st)
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
// whose key id is vkey and returns the statement it carries.
func VerifyExport(envJSON []byte, vkey string, pub ed25519.PublicKey) ([]byte, error) {
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
	if env.PayloadType != PayloadType {
		return nil, fmt.Errorf("payload type %q, want %q", env.PayloadType, PayloadType)
	}
	return env.DecodeB64Payload()
}
