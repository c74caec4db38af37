package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// User is a test user who may sign in.
type User struct {
	Subject string   `json:"sub"`
	Email   string   `json:"email,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	// Scopes are the scopes the user may be granted: a request for others
	// gets only these (and the OpenID Connect ones).
	Scopes []string `json:"scopes"`
}

// Bounds of the users file.
const (
	maxUsersBytes = 1 << 20
	maxUsers      = 1000
)

// loadUsers reads the users file: {"users": [User...]}.
func loadUsers(path string) ([]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxUsersBytes+1))
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	if len(data) > maxUsersBytes {
		return nil, fmt.Errorf("users file %s: larger than %d bytes", path, maxUsersBytes)
	}
	users, err := parseUsers(data)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return users, nil
}

func parseUsers(data []byte) ([]User, error) {
	var doc struct {
		Users []User `json:"users"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf(`want {"users":[{"sub":...,"email":...,"groups":[...],"scopes":[...]}]}: %w`, err)
	}
	if len(doc.Users) == 0 {
		return nil, errors.New("no users: list at least one under \"users\"")
	}
	if len(doc.Users) > maxUsers {
		return nil, fmt.Errorf("%d users, more than %d", len(doc.Users), maxUsers)
	}
	seen := map[string]bool{}
	for i, u := range doc.Users {
		if strings.TrimSpace(u.Subject) == "" {
			return nil, fmt.Errorf("user %d has no sub", i)
		}
		if seen[u.Subject] {
			return nil, fmt.Errorf("user %d: sub %q appears twice", i, u.Subject)
		}
		seen[u.Subject] = true
	}
	return doc.Users, nil
}

// find returns the user whose sub or email is hint, or the first user
// when hint is empty.
func find(users []User, hint string) (User, bool) {
	if hint == "" {
		return users[0], true
	}
	for _, u := range users {
		if u.Subject == hint || (u.Email != "" && u.Email == hint) {
			return u, true
		}
	}
	return User{}, false
}
