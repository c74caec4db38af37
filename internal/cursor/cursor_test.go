package cursor

import (
	"errors"
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
