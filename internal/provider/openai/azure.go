package openai

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/openai/openai-go/v3/azure"
	"github.com/openai/openai-go/v3/option"
)

// AzureV1 is the API version of Azure OpenAI's v1 route
// ({endpoint}/openai/v1/…), which needs no dated version.
const AzureV1 = "v1"

// AzureConfig configures a client of the Responses API of an Azure OpenAI
// resource. The request and stream are OpenAI's; what differs is where
// requests go and how they authenticate, which openai-go's azure package
// does: the key in an "api-key" header (or an Entra ID token as a Bearer
// token), HTTPS only (plain HTTP only to a loopback address), and no
// redirect that leaves the endpoint's origin.
type AzureConfig struct {
	// Config is the adapter's configuration; its BaseURL and APIKey are
	// not used.
	Config
	// Endpoint is the resource's address:
	// https://RESOURCE.openai.azure.com (a path below it, as an API
	// gateway has, is kept).
	Endpoint string
	// APIKey is the resource's key, sent as the api-key header.
	APIKey string
	// Token is a Microsoft Entra ID access token for the resource; when set
	// it is sent as a Bearer token instead of the key.
	Token string
	// APIVersion picks the route: "" or "v1" the v1 route,
	// {endpoint}/openai/v1/responses?api-version=v1; "preview" the v1
	// route's preview features (api-version=preview); a dated version
	// ("2025-04-01-preview") the route of resources without the v1 API,
	// {endpoint}/openai/responses?api-version=DATE. The deployment is
	// named by the request's model on every route.
	APIVersion string
	// VersionFrom names where APIVersion was set ("--api-version",
	// "AZURE_OPENAI_API_VERSION"), which its refusal says; "" for none.
	VersionFrom string
}

// v1 reports whether the configuration uses the v1 route.
func (c AzureConfig) v1() bool {
	return c.APIVersion == "" || c.APIVersion == AzureV1 || c.APIVersion == "preview"
}

// NewAzure returns a Responses client of an Azure OpenAI resource. It
// fails when the endpoint is not an absolute http(s) URL, when plain HTTP
// would carry the credential off this machine, or when neither a key nor a
// token is given.
func NewAzure(cfg AzureConfig) (*Client, error) {
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("azure: the endpoint %q is not a resource's address (https://RESOURCE.openai.azure.com)%s", cfg.Endpoint, EndpointFix(cfg.Endpoint))
	}
	if strings.Contains(u.Path, "/openai/deployments/") {
		// The portal's target URI of a deployment: the routes would
		// follow its path.
		return nil, fmt.Errorf("azure: the endpoint %q is a deployment's target URI, not a resource's address (https://RESOURCE.openai.azure.com)%s", cfg.Endpoint, EndpointFix(cfg.Endpoint))
	}
	loopback := loopbackHost(u.Hostname())
	if u.Scheme == "http" && !loopback {
		return nil, fmt.Errorf("azure: the endpoint %s is plain HTTP; Azure credentials go only over HTTPS (HTTP only to a loopback address)", cfg.Endpoint)
	}
	if cfg.Token == "" && cfg.APIKey == "" {
		return nil, errors.New("azure: neither an API key nor an Entra ID token is given")
	}
	if !cfg.v1() && !datedVersion(cfg.APIVersion) {
		from := ""
		if cfg.VersionFrom != "" {
			from = " (" + cfg.VersionFrom + ")"
		}
		return nil, fmt.Errorf("azure: the API version %q%s is not one of v1 (the default), preview, or a dated version such as 2024-10-21 or 2025-04-01-preview", cfg.APIVersion, from)
	}
	version := cfg.APIVersion
	if version == "" {
		version = AzureV1
	}
	endpoint := ResourceEndpoint(cfg.Endpoint)
	u, _ = url.Parse(endpoint)
	route := []option.RequestOption{azure.WithEndpoint(endpoint, version)}
	if cfg.v1() {
		route = append(route, option.WithMiddleware(v1Route(u.EscapedPath())))
	}
	if cfg.Token != "" {
		route = append(route, azure.WithTokenCredential(staticToken(cfg.Token)))
	} else {
		route = append(route, azure.WithAPIKey(cfg.APIKey))
	}
	if u.Scheme == "http" {
		route = append(route, azure.WithUnsafeAllowHTTP())
	}
	c := newClient(cfg.Config, endpoint+"/openai", route...)
	if cfg.v1() {
		c.base += "/v1"
	}
	if cfg.Label == "" {
		c.label = "azure"
	}
	c.api = "Azure OpenAI's API"
	c.notFoundHint = "--model names the deployment: check its name among the resource's deployments"
	if cfg.ReachHint == "" {
		c.hint = "check the network or the Azure endpoint"
	}
	if cfg.ReachHint == "" || cfg.NotAPIHint != "" {
		c.notAPIHint = cmp.Or(cfg.NotAPIHint, "is AZURE_OPENAI_ENDPOINT the address of an Azure OpenAI resource?")
	}
	return c, nil
}

// EndpointFix says the value to use for an endpoint pasted in another
// form: a host without its scheme, or the portal's target URI of a
// deployment (whose name --model takes): "; set it to
// https://r.openai.azure.com, and pass --model gpt-5.2 (the deployment)".
// "" when neither. It never says the endpoint's query.
func EndpointFix(v string) string {
	s := strings.TrimSpace(v)
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || !strings.Contains(u.Host, ".") {
		return ""
	}
	fix := "; set it to " + u.Scheme + "://" + u.Host
	if rest, ok := strings.CutPrefix(u.Path, "/openai/deployments/"); ok {
		if dep, _, _ := strings.Cut(rest, "/"); dep != "" {
			fix += ", and pass --model " + dep + " (the deployment)"
		}
	}
	return fix
}

// datedVersion reports whether v is a dated API version, as Azure names
// them: 2024-10-21, 2025-04-01-preview.
func datedVersion(v string) bool {
	d, _ := strings.CutSuffix(v, "-preview")
	if len(d) != len("2006-01-02") {
		return false
	}
	_, err := time.Parse("2006-01-02", d)
	return err == nil
}

// ResourceEndpoint is the resource's address of an endpoint as the Azure
// portal may show it: the v1 API's base URL
// (https://RESOURCE.openai.azure.com/openai/v1) or its /openai path lose
// them, since the routes add them again; any other path is kept.
func ResourceEndpoint(endpoint string) string {
	e := strings.TrimRight(endpoint, "/")
	for _, suffix := range []string{"/openai/v1", "/openai"} {
		if strings.HasSuffix(e, suffix) {
			return strings.TrimSuffix(e, suffix)
		}
	}
	return e
}

// v1Route moves the azure package's routes ({prefix}/openai/…) to the v1
// API's ({prefix}/openai/v1/…); prefix is the endpoint's escaped path.
func v1Route(prefix string) option.Middleware {
	from := strings.TrimSuffix(prefix, "/") + "/openai/"
	return func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		p := r.URL.EscapedPath()
		if rest, ok := strings.CutPrefix(p, from); ok && !strings.HasPrefix(rest, "v1/") {
			escaped := from + "v1/" + rest
			unescaped, err := url.PathUnescape(escaped)
			if err != nil {
				return nil, fmt.Errorf("azure: route %s: %w", escaped, err)
			}
			r.URL.Path, r.URL.RawPath = unescaped, escaped
		}
		return next(r)
	}
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// staticToken is an Entra ID access token given whole (from the
// environment): the credential azure.WithTokenCredential asks for, without
// the azidentity module. It never refreshes; an expired token is the
// server's 401.
type staticToken string

// GetToken implements azcore.TokenCredential.
func (t staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	// The policy caches a token until shortly before ExpiresOn; the same
	// token is handed out again then.
	return azcore.AccessToken{Token: string(t), ExpiresOn: time.Now().Add(time.Hour)}, nil
}
