package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/trussdev/truss/internal/provider"
	"github.com/trussdev/truss/internal/surface"
)

// ModelsTimeout bounds one Session.Models call.
const ModelsTimeout = 30 * time.Second

// Models lists the models the session's provider serves, for a model
// picker (the interactive /model): the models the server dates newest
// first, then the undated ones by ID; each ID once, at most
// provider.MaxModels. It asks the server on every call, once (no retries),
// for at most ModelsTimeout.
//
// A cloud platform's runtime has no model list (Bedrock, Vertex AI): its
// models are then the ids Truss's catalog gives for the platform
// (platformModels), undated, in the catalog's order.
//
// It fails with ErrClosed after Close. When the session has no model
// (Options.NoModel), its adapter cannot list models (it is no
// provider.ModelLister) or the server has no model list (and the provider
// is no cloud platform), the error matches provider.ErrNotSupported; a failed answer is a *provider.Error (an
// unknown key, a rate limit, ...). It reads only what Open set and the
// adapter, so it may be called while a run is in progress.
func (s *Session) Models(ctx context.Context) ([]provider.ModelInfo, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if s.prov == nil {
		return nil, provider.Unsupported("this session has no model to list models from", nil)
	}
	ml, ok := s.prov.(provider.ModelLister)
	if !ok {
		return nil, provider.Unsupported(fmt.Sprintf("%s: the %s adapter cannot list models", cmp.Or(s.opts.Provider, s.prov.Name()), s.prov.Name()), nil)
	}
	lctx, cancel := context.WithTimeout(ctx, ModelsTimeout)
	defer cancel()
	ms, err := ml.Models(lctx)
	if errors.Is(err, provider.ErrNotSupported) {
		// A cloud platform's runtime lists no models: the catalog's ids
		// of the platform are what Truss knows it serves.
		if ids := s.platformModels(); len(ids) > 0 {
			return ids, nil
		}
	}
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("%s: the server did not answer the model list within %s: %w", cmp.Or(s.opts.Provider, s.prov.Name()), ModelsTimeout, err)
		}
		// The adapter's error names the provider and what was asked.
		return nil, err
	}
	return pickerOrder(ms), nil
}

// platformModels are the model ids Truss's catalog gives for the
// session's provider when it is a cloud platform's (Bedrock's inference
// profiles for the session's region and its base ids, Vertex AI's ids,
// the Gemini models of the catalog on Vertex AI), in the catalog's order;
// nil for another provider.
func (s *Session) platformModels() []provider.ModelInfo {
	def, err := s.providerDef(s.opts.Provider)
	if err != nil || def.Named {
		return nil
	}
	var ids []string
	switch def.Dialect {
	case "bedrock":
		region := cmpOr(s.opts.Region, firstEnv(def.RegionEnv))
		for _, id := range surface.PlatformIDs("bedrock") {
			if p := id.Suggest(region); p != id.ID {
				ids = append(ids, p)
			}
			ids = append(ids, id.ID)
		}
	case "vertex":
		for _, id := range surface.PlatformIDs("vertex") {
			ids = append(ids, id.ID)
		}
	case "vertex-gemini":
		for _, e := range def.Catalog() {
			if n := strings.TrimSuffix(e.Pattern, "*"); n != "" && !isGlobPattern(n) {
				ids = append(ids, n)
			}
		}
	}
	var out []provider.ModelInfo
	for _, id := range ids {
		out = append(out, provider.ModelInfo{ID: id})
	}
	return out
}

// pickerOrder returns ms in a picker's order: dated models newest first,
// then undated ones; ties by ID. A model without an ID, or whose ID came
// before, is dropped, and the list is cut at provider.MaxModels.
func pickerOrder(ms []provider.ModelInfo) []provider.ModelInfo {
	seen := make(map[string]bool, len(ms))
	out := make([]provider.ModelInfo, 0, min(len(ms), provider.MaxModels))
	for _, m := range ms {
		if m.ID == "" || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b provider.ModelInfo) int {
		if az, bz := a.Created.IsZero(), b.Created.IsZero(); az != bz {
			if az {
				return 1
			}
			return -1
		}
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), provider.MaxModels)]
}
