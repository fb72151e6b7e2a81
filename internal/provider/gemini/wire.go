package gemini

import "encoding/json"

// Wire types of generateContent / streamGenerateContent (v1beta), with the
// JSON names of the API reference (ai.google.dev/api/generate-content) and
// of google.golang.org/genai's types, which the tests compare against.
type (
	// Request is the body of streamGenerateContent.
	Request struct {
		Contents          []Content         `json:"contents"`
		SystemInstruction *Content          `json:"systemInstruction,omitempty"`
		Tools             []Tool            `json:"tools,omitempty"`
		GenerationConfig  *GenerationConfig `json:"generationConfig,omitempty"`
	}
	// Content is one turn: role "user" or "model", and its parts.
	Content struct {
		Role  string `json:"role,omitempty"`
		Parts []Part `json:"parts"`
	}
	// Part is one part of a content. ThoughtSignature is base64 (genai's
	// []byte); it is kept as the string the server sent so that it
	// replays byte for byte.
	Part struct {
		Text             string            `json:"text,omitempty"`
		Thought          bool              `json:"thought,omitempty"`
		ThoughtSignature string            `json:"thoughtSignature,omitempty"`
		FunctionCall     *FunctionCall     `json:"functionCall,omitempty"`
		FunctionResponse *FunctionResponse `json:"functionResponse,omitempty"`
	}
	// FunctionCall is a model's call; ID is set by Gemini 3 models.
	FunctionCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	}
	// FunctionResponse answers a FunctionCall: Response holds "output", or
	// "error" for a failed call, as the API reference recommends.
	FunctionResponse struct {
		ID       string         `json:"id,omitempty"`
		Name     string         `json:"name"`
		Response map[string]any `json:"response"`
	}
	// Tool groups function declarations.
	Tool struct {
		FunctionDeclarations []FunctionDeclaration `json:"functionDeclarations"`
	}
	// FunctionDeclaration declares a function tool. Its parameters are
	// sent as parametersJsonSchema (full JSON Schema), not parameters
	// (the OpenAPI 3.0 subset): see Client.
	FunctionDeclaration struct {
		Name                 string          `json:"name"`
		Description          string          `json:"description,omitempty"`
		ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
	}
	// GenerationConfig holds the output limit and the thinking settings.
	GenerationConfig struct {
		MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
		ThinkingConfig  *ThinkingConfig `json:"thinkingConfig,omitempty"`
	}
	// ThinkingConfig: a budget for Gemini 2.5 models, a level for Gemini 3.
	ThinkingConfig struct {
		IncludeThoughts bool   `json:"includeThoughts,omitempty"`
		ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
		ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	}
	// Chunk is one server-sent event of the stream: a
	// GenerateContentResponse, or an error.
	Chunk struct {
		Candidates     []Candidate     `json:"candidates"`
		PromptFeedback *PromptFeedback `json:"promptFeedback,omitempty"`
		UsageMetadata  *UsageMetadata  `json:"usageMetadata,omitempty"`
		ModelVersion   string          `json:"modelVersion,omitempty"`
		ResponseID     string          `json:"responseId,omitempty"`
		Error          *ErrorBody      `json:"error,omitempty"`
	}
	// Candidate is one answer; Truss asks for one.
	Candidate struct {
		Content       *Content `json:"content,omitempty"`
		FinishReason  string   `json:"finishReason,omitempty"`
		FinishMessage string   `json:"finishMessage,omitempty"`
		Index         int      `json:"index"`
	}
	// PromptFeedback says why a prompt was blocked.
	PromptFeedback struct {
		BlockReason string `json:"blockReason,omitempty"`
	}
	// UsageMetadata counts tokens. PromptTokenCount includes the cached
	// tokens; thoughts are counted apart from the candidates and billed as
	// output.
	UsageMetadata struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
		TotalTokenCount         int64 `json:"totalTokenCount"`
	}
	// ErrorBody is Google's error: {"error": {"code", "message", "status",
	// "details": [{"@type": "...RetryInfo", "retryDelay": "30s"}]}}.
	ErrorBody struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Status  string            `json:"status"`
		Details []json.RawMessage `json:"details,omitempty"`
	}
)
