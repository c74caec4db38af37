package testrun

import (
	"encoding/xml"
	"io"
)

// The JUnit XML format CI systems read (GitHub Actions' test reporters,
// GitLab, Jenkins): one suite per template, one case per test; a failure
// carries its reason, an evaluator not run is skipped.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes rs as a JUnit XML document, the templates' suites in
// the order their first results come.
func WriteJUnit(w io.Writer, rs []Result) error {
	doc := junitSuites{Name: "flowyprompt"}
	index := map[string]int{}
	for _, r := range rs {
		i, ok := index[r.Template]
		if !ok {
			i = len(doc.Suites)
			index[r.Template] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: r.Template})
		}
		s := &doc.Suites[i]
		name := r.Test
		if name == "" {
			name = "(template file)"
		}
		c := junitCase{Name: name, ClassName: r.Template}
		switch r.Status {
		case Fail:
			c.Failure = &junitMessage{Message: r.Reason}
			s.Failures++
			doc.Failures++
		case NotRun:
			c.Skipped = &junitMessage{Message: r.Reason}
			s.Skipped++
			doc.Skipped++
		}
		s.Tests++
		doc.Tests++
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
