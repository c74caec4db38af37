package cursor

import (
	"errors"
	"reflect"
	"testing"
)

func TestStart(t *testing.T) {
	list := []string{"a", "b", "c"}
	id := func(s string) string { return s }
	tests := []struct {
		name   string
		cursor string
		list   []string
		want   int
		err    error
	}{
		{"first page", "", list, 0, nil},
		{"a cursor we wrote", Encode(2, "c"), list, 2, nil},
		{"the first item", Encode(0, "a"), list, 0, nil},
		{"not base64", "!!!", list, 0, ErrInvalid},
		{"base64 but not ours", "aGVsbG8", list, 0, ErrInvalid},
		{"negative offset", Encode(-1, "a"), list, 0, ErrInvalid},
		{"past the end", Encode(4, "x"), list, 0, ErrInvalid},
		{"an item was removed before it", Encode(2, "c"), []string{"a", "c"}, 0, ErrChanged},
		{"an item was added before it", Encode(1, "b"), []string{"0", "a", "b"}, 0, ErrChanged},
		{"its item is gone at the end", Encode(2, "c"), []string{"a", "b"}, 0, ErrChanged},
		{"a key with colons", Encode(1, "x:y"), []string{"a", "x:y"}, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Start(tt.list, tt.cursor, id)
			if !errors.Is(err, tt.err) || got != tt.want {
				t.Errorf("Start(%q) = %d, %v; want %d, %v", tt.cursor, got, err, tt.want, tt.err)
			}
		})
	}
}

// TestPage: a tool's cursor carries its listing, and its wire forms stay
// those handed out before: the current one and the earlier one without
// filters.
func TestPage(t *testing.T) {
	p := Page{Offset: 20, Key: "Code_Review", Filters: map[string]string{"tag": "git", "query": "커밋 메시지"}, Limit: 10}
	tests := []struct {
		name   string
		cursor string
		want   Page
		err    error
	}{
		{"round trip", p.Encode(), p, nil},
		{"no filters, no limit", Page{Offset: 1, Key: "a"}.Encode(), Page{Offset: 1, Key: "a"}, nil},
		// As the tools wrote them: base64url of "p:" and the JSON.
		{"the current form", "cDp7Im8iOjMsImsiOiJCdWdfVHJpYWdlIiwiZiI6eyJ0YWciOiJnaXQifSwibCI6Mn0",
			Page{Offset: 3, Key: "Bug_Triage", Filters: map[string]string{"tag": "git"}, Limit: 2}, nil},
		{"the earlier form", "dDozOkJ1Z19UcmlhZ2U", Page{Offset: 3, Key: "Bug_Triage"}, nil},
		{"an MCP list's cursor", Encode(3, "Bug_Triage"), Page{}, ErrInvalid},
		{"not base64", "!!!", Page{}, ErrInvalid},
		{"not JSON", "cDp7", Page{}, ErrInvalid},
		{"a negative offset", Page{Offset: -1, Key: "a"}.Encode(), Page{}, ErrInvalid},
		{"the earlier form, no number", "dDp4OmE", Page{}, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.cursor)
			if !errors.Is(err, tt.err) || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode(%q) = %+v, %v; want %+v, %v", tt.cursor, got, err, tt.want, tt.err)
			}
		})
	}
	if _, err := Start([]string{"a", "b", "c", "Bug_Triage"}, "cDp7Im8iOjMsImsiOiJCdWdfVHJpYWdlIn0", func(s string) string { return s }); !errors.Is(err, ErrInvalid) {
		t.Errorf("Start took a tool's cursor: %v", err)
	}
}

func TestPlace(t *testing.T) {
	list := []string{"a", "b", "c"}
	id := func(s string) string { return s }
	tests := []struct {
		name string
		p    Page
		want int
		err  error
	}{
		{"its item is there", Page{Offset: 1, Key: "b"}, 1, nil},
		{"another item there", Page{Offset: 1, Key: "c"}, 0, ErrChanged},
		{"past the end", Page{Offset: 3, Key: "d"}, 0, ErrChanged},
	}
	for _, tt := range tests {
		if got, err := Place(list, tt.p, id); got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("%s: Place = %d, %v; want %d, %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}
