// Package projects is a client's project calls, written the way teams write them: mostly careful, with two paths
// that are not. Its tests pass against the mock; a fault campaign finds the rest (docs/guide/campaigns.md):
//
//	mockserver campaign --operation createProject --operation listProjects --operation editProject \
//	    --fault 'status 503' --fault reset -- go test ./projects
//
// What it finds:
//   - Names reads with retries that honour Retry-After and give up after a few: it survives a 503 and a reset of
//     its read;
//   - Create retries a 503 properly, but also sends its POST again after a connection error, when the project may
//     have been made already: after a reset it meets the 409 its own first write caused (misbehaved);
//   - Rename handles no error at all: a 503 fails its test (failed).
package projects

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

const org = "8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10"
const retries = 4

// Client calls the platform at BaseURL with an API token.
type Client struct {
	BaseURL, Token string
	HTTP           *http.Client
}

// New is a client of the platform at baseURL with token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// Project is a project of the platform.
type Project struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func (c *Client) send(method, path string, body any) (int, http.Header, []byte, error) {
	var reader io.Reader
	if body != nil {
		encoded, _ := json.Marshal(body)
		reader = bytes.NewReader(encoded)
	}
	request, err := http.NewRequest(method, c.BaseURL+path, reader)
	if err != nil {
		return 0, nil, nil, err
	}
	request.Header.Set("Authorization", "Token "+c.Token)
	request.Header.Set("Content-Type", "application/json")
	response, err := c.HTTP.Do(request)
	if err != nil {
		return 0, nil, nil, err
	}
	defer response.Body.Close()
	data, err := io.ReadAll(response.Body)
	return response.StatusCode, response.Header, data, err
}

// withRetries sends a request again after a 429 or 503 (waiting what Retry-After says) or a connection error, at
// most `retries` times, and decodes the reply into out.
func (c *Client) withRetries(method, path string, body, out any) error {
	for attempt := 0; ; attempt++ {
		status, header, data, err := c.send(method, path, body)
		if err != nil {
			if attempt == retries-1 {
				return err
			}
			time.Sleep(time.Duration(200<<attempt) * time.Millisecond)
			continue
		}
		if (status == 429 || status == 503) && attempt < retries-1 {
			wait, _ := strconv.Atoi(header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			continue
		}
		if status >= 400 {
			return fmt.Errorf("%s %s: %d %s", method, path, status, data)
		}
		return json.Unmarshal(data, out)
	}
}

func max(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// Names are the names of the organization's projects.
func (c *Client) Names() (map[string]bool, error) {
	var page struct {
		Results []Project `json:"results"`
	}
	if err := c.withRetries(http.MethodGet, "/organization/"+org+"/project", nil, &page); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, project := range page.Results {
		names[project.Name] = true
	}
	return names, nil
}

// Create makes a project. The path that is not careful: a connection error after the POST left may mean the
// project was made.
func (c *Client) Create(name string) (Project, error) {
	var made Project
	return made, c.withRetries(http.MethodPost, "/organization/"+org+"/project", map[string]string{"name": name}, &made)
}

// Rename renames a project. The other one: no error handled at all.
func (c *Client) Rename(id, name string) (Project, error) {
	var renamed Project
	status, _, data, err := c.send(http.MethodPut, "/project/"+id, map[string]string{"name": name})
	if err != nil {
		return renamed, err
	}
	if status >= 400 {
		return renamed, fmt.Errorf("rename: %d %s", status, data)
	}
	return renamed, json.Unmarshal(data, &renamed)
}
