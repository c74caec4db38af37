package templates

import (
	"fmt"

	"github.com/flowyprompt/flowyprompt/internal/fault"
)

// ValidationReport is the outcome of validating one template file, as the
// validate tool and the validate command report it. Errors and Warnings
// are never nil, so they marshal as [].
type ValidationReport struct {
	Valid bool   `json:"valid"`
	Name  string `json:"name,omitempty"`
	// Code is the symbolic code of the error (INVALID_TEMPLATE,
	// TEMPLATE_TOO_LARGE) when the file is invalid.
	Code     string    `json:"code,omitempty"`
	Errors   []Problem `json:"errors"`
	Warnings []string  `json:"warnings"`
}

// Validate parses data as a template file and reports errors and warnings.
// fileName (may be empty) names the file in messages and for the check that
// it matches metadata.name; maxSize is Parse's limit (0: the default).
func Validate(data []byte, fileName string, maxSize int) ValidationReport {
	t, warns, err := Parse(data, ParseOptions{MaxFileSize: maxSize, FileName: fileName})
	rep := ValidationReport{Errors: []Problem{}, Warnings: []string{}}
	for _, w := range warns {
		rep.Warnings = append(rep.Warnings, w.String())
	}
	if err != nil {
		return rep.failed(err)
	}
	rep.Valid = true
	rep.Name = t.Metadata.Name
	return rep
}

// failed is rep for a file that err says is invalid: its code and each
// problem, or the error as the one problem when it names no field.
func (rep ValidationReport) failed(err error) ValidationReport {
	rep.Code = fault.CodeOf(err)
	rep.Errors = Problems(err)
	if len(rep.Errors) == 0 {
		rep.Errors = []Problem{FaultProblem(err)}
	}
	return rep
}

// ValidateFlow parses data as a flow file (flows/NAME.json) and checks it
// against the templates lookup finds, as a library's load does.
func ValidateFlow(data []byte, fileName string, maxSize int, lookup func(string) (*Entry, bool)) ValidationReport {
	rep := ValidationReport{Errors: []Problem{}, Warnings: []string{}}
	f, err := ParseFlow(data, fileName, maxSize, lookup)
	if err != nil {
		return rep.failed(err)
	}
	rep.Valid, rep.Name = true, f.Name
	return rep
}

// FaultProblem reports an error that points at no field (a file over the
// size limit, one that cannot be read) as one problem of the whole
// document: its code, what and why, and how to fix it.
func FaultProblem(err error) Problem {
	f := fault.As(err)
	if f == nil {
		return Problem{Message: err.Error()}
	}
	msg := fmt.Sprintf("%s: %s", f.Code, f.Error())
	if f.How != "" {
		msg += "; how to fix: " + f.How
	}
	return Problem{Message: msg}
}
