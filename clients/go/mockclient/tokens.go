package mockclient

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// tokenTable finds a token by any of its names (lower case).
type tokenTable struct {
	byName map[string]string
	hint   string
	source string // where the table came from (for errors)
}

func (t *tokenTable) lookup(name string) (string, error) {
	if token, ok := t.byName[strings.ToLower(strings.TrimSpace(name))]; ok {
		return token, nil
	}
	return "", &UnknownTokenError{Name: name, hint: t.hint}
}

// UnknownTokenError is a token name Token (or Headers) does not know; its message lists the valid ones.
type UnknownTokenError struct {
	Name string
	hint string
}

func (e *UnknownTokenError) Error() string {
	return fmt.Sprintf("no token named %q: use %s", e.Name, e.hint)
}

func defaultTokenTable() *tokenTable {
	table := &tokenTable{byName: map[string]string{}, source: "the default fixtures",
		hint: "admin, read, write or deploy (also the fixtures' token names admin, reader, writer, deployer, " +
			"or the scopes Admin, Read, Write, Deploy)"}
	tokens := DefaultTokens()
	for name, key := range defaultTokenNames {
		table.byName[name] = tokens[key]
	}
	return table
}

// fetchTokens reads quick_start.tokens of the sandbox's start page (GET / with Accept: application/json):
// {"admin": {"token": "...", "scopes": ["Admin"]}, ...}. Each token is found by its name, by each scope
// (admin, read, write, deploy: the short names) and, for the default fixtures' names, by their aliases.
func (c *Client) fetchTokens(ctx context.Context) *tokenTable {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/", nil)
	if err != nil {
		return defaultTokenTable()
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.s.http.Do(req)
	if err != nil {
		return defaultTokenTable()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return defaultTokenTable()
	}
	var page struct {
		QuickStart struct {
			Tokens map[string]struct {
				Token  string   `json:"token"`
				Scopes []string `json:"scopes"`
			} `json:"tokens"`
		} `json:"quick_start"`
	}
	if json.Unmarshal(data, &page) != nil || len(page.QuickStart.Tokens) == 0 {
		return defaultTokenTable()
	}
	table := &tokenTable{byName: map[string]string{}, source: "the server"}
	names := make([]string, 0, len(page.QuickStart.Tokens))
	for name := range page.QuickStart.Tokens {
		names = append(names, name)
	}
	sort.Strings(names)
	var scopes []string
	for _, name := range names {
		entry := page.QuickStart.Tokens[name]
		if entry.Token == "" {
			continue
		}
		table.byName[strings.ToLower(name)] = entry.Token
		for _, scope := range entry.Scopes {
			key := strings.ToLower(scope)
			if _, taken := table.byName[key]; !taken {
				table.byName[key] = entry.Token
				scopes = append(scopes, scope)
			}
		}
	}
	if len(table.byName) == 0 {
		return defaultTokenTable()
	}
	for alias, key := range defaultTokenNames { // reader -> read ... when the server's names leave them free
		if _, taken := table.byName[alias]; !taken {
			if token, ok := table.byName[key]; ok {
				table.byName[alias] = token
			}
		}
	}
	table.hint = fmt.Sprintf("one of the server's tokens %s (or a scope: %s)", strings.Join(names, ", "),
		strings.Join(scopes, ", "))
	return table
}
