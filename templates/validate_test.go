package templates

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		fileName string
		maxSize  int
		want     ValidationReport
	}{
		{name: "valid", data: string(tmpl("Hello", "Hi.")), fileName: "Hello.json",
			want: ValidationReport{Valid: true, Name: "Hello", Errors: []Problem{}, Warnings: []string{}}},
		// Warnings never make a template invalid, and come in Parse's order.
		{name: "valid with warnings", fileName: "Greeting.json",
			data: `{"metadata":{"name":"Hello","description":"d","version":"1.0.0"},"variables":[{"name":"unused","type":"string","description":"u"}],` +
				`"results":[{"name":"S","content":"Hi {{who}}."}],"extra":1}`,
			want: ValidationReport{Valid: true, Name: "Hello", Errors: []Problem{}, Warnings: []string{
				`Hello: /extra: unknown field "extra" is ignored`,
				`Hello: /results/0/content: placeholder {{who}} has no entry in variables: it stays as written unless an argument named "who" is given`,
				`Hello: /variables/0/name: variable "unused" is defined but no section uses {{unused}}`,
				`Hello: /metadata/name: file "Greeting.json" holds template "Hello": clients see the name "Hello"; rename the file to Hello.json`,
			}}},
		{name: "every problem at its pointer", fileName: "x.json",
			data: `{"metadata":{"name":"bad name!","version":"one"},"variables":[],"results":[]}`,
			want: ValidationReport{Code: "INVALID_TEMPLATE", Warnings: []string{}, Errors: []Problem{
				{Pointer: "/metadata/description", Message: `required field "description" is missing`},
				{Pointer: "/metadata/name", Message: `"bad name!" is not a valid template name: use only letters, digits, '_' and '-'`},
				{Pointer: "/metadata/version", Message: `"one" is not a semantic version like 1.0.0`},
				{Pointer: "/results", Message: "needs at least 1 item(s)"},
			}}},
		// A conversation's problems name the message by its index.
		{name: "conversation", fileName: "Chat.json",
			data: `{"metadata":{"name":"Chat","description":"d","version":"1.0.0"},"variables":[],` +
				`"messages":[{"role":"user","content":"Hi."},{"role":"system","content":"Be brief."},{"role":"assistant","content":" "}]}`,
			want: ValidationReport{Code: "INVALID_TEMPLATE", Warnings: []string{}, Errors: []Problem{
				{Pointer: "/messages/1/role", Message: `must be one of "user", "assistant"`},
				{Pointer: "/messages/2/content", Message: "must not be empty"},
			}}},
		{name: "valid conversation", fileName: "Chat.json",
			data: `{"metadata":{"name":"Chat","description":"d","version":"1.0.0"},"variables":[{"name":"q","type":"string","description":"d","required":true}],` +
				`"messages":[{"role":"user","content":"{{q}}"},{"role":"assistant","content":"Sure."}]}`,
			want: ValidationReport{Valid: true, Name: "Chat", Errors: []Problem{}, Warnings: []string{}}},
		{name: "malformed JSON", data: `{nope`,
			want: ValidationReport{Code: "INVALID_TEMPLATE", Warnings: []string{}, Errors: []Problem{
				{Message: "malformed JSON at line 1, column 2: invalid character 'n' looking for beginning of object key string"},
			}}},
		// An error without problems is reported as one, the whole message.
		{name: "too large", data: string(tmpl("Big", "x")), fileName: "big.json", maxSize: 10,
			want: ValidationReport{Code: "TEMPLATE_TOO_LARGE", Warnings: []string{}, Errors: []Problem{
				{Message: "TEMPLATE_TOO_LARGE: template file big.json is 125 bytes, over the 10-byte limit: larger files are refused so one file cannot exhaust memory or a client's context window; " +
					`how to fix: split the template into smaller ones, or move long reference text into a resource file the template lists in "resources" (it is sent with the prompt); MAX_FILE_SIZE raises the limit`},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Validate([]byte(tt.data), tt.fileName, tt.maxSize)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Validate mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidationReportJSON: the lists marshal as [] when empty, never null,
// and the name and code only when there is one.
func TestValidationReportJSON(t *testing.T) {
	tests := []struct {
		name string
		data string
		want string
	}{
		{name: "valid", data: string(tmpl("Hello", "Hi.")), want: `{"valid":true,"name":"Hello","errors":[],"warnings":[]}`},
		{name: "invalid", data: `[]`,
			want: `{"valid":false,"code":"INVALID_TEMPLATE","errors":[{"pointer":"","message":"must be an object, not array"}],"warnings":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(Validate([]byte(tt.data), "", 0))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("JSON = %s, want %s", b, tt.want)
			}
		})
	}
}
