// Package platform is a tiny client of the Infrastructure Deployment Platform API, written the way a
// client team writes one: plain net/http, the base URL and the token as parameters. Nothing in it knows
// about the mock; its tests (platform_test.go) point it at a sandbox of the mock.
package platform

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls the platform at BaseURL with an API token.
type Client struct {
	BaseURL string
	Token   string
	HTTP    *http.Client
	// Poll is the wait between two status reads of WaitDeployed (default 2 s).
	Poll time.Duration
	// Sleep waits between two status reads (default: a real sleep). Tests against a mock with a manual
	// clock move the mock's clock instead.
	Sleep func(ctx context.Context, d time.Duration) error
}

// New is a client of the platform at baseURL with token.
func New(baseURL, token string) *Client {
	return &Client{BaseURL: strings.TrimRight(baseURL, "/"), Token: token, HTTP: &http.Client{Timeout: 30 * time.Second}}
}

// APIError is a reply of the platform with a status >= 400.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("platform answered %d: %s", e.Status, e.Message)
}

// DeploymentFailed is a deployment that ended in an error state.
type DeploymentFailed struct{ State string }

func (e *DeploymentFailed) Error() string { return "deployment failed: " + e.State }

// Status is what GET /application/{id}/status says.
type Status struct {
	State               string `json:"state"`
	DeploymentRequestID string `json:"deployment_request_id"`
}

// Deploy asks for a deployment of the application; it returns the deployment request's id.
func (c *Client) Deploy(ctx context.Context, appID string) (string, error) {
	var reply struct {
		ID string `json:"id"`
	}
	return reply.ID, c.do(ctx, http.MethodPost, "/application/"+appID+"/deploy", &reply)
}

// Status reads the application's status.
func (c *Client) Status(ctx context.Context, appID string) (*Status, error) {
	var status Status
	return &status, c.do(ctx, http.MethodGet, "/application/"+appID+"/status", &status)
}

// WaitDeployed reads the status until the application is DEPLOYED (nil) or in an error state
// (*DeploymentFailed). A 5xx reply is read again at the next poll, up to 3 times in a row.
func (c *Client) WaitDeployed(ctx context.Context, appID string, timeout time.Duration) error {
	poll, sleep := c.Poll, c.Sleep
	if poll <= 0 {
		poll = 2 * time.Second
	}
	if sleep == nil {
		sleep = func(ctx context.Context, d time.Duration) error {
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	failures := 0
	for waited := time.Duration(0); waited <= timeout; waited += poll {
		status, err := c.Status(ctx, appID)
		if apiErr, ok := err.(*APIError); ok && apiErr.Status >= 500 && failures < 3 {
			failures++
		} else if err != nil {
			return err
		} else {
			failures = 0
			switch {
			case status.State == "DEPLOYED":
				return nil
			case strings.HasSuffix(status.State, "_ERROR"):
				return &DeploymentFailed{State: status.State}
			}
		}
		if err := sleep(ctx, poll); err != nil {
			return err
		}
	}
	return fmt.Errorf("application %s not deployed after %s", appID, timeout)
}

func (c *Client) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.BaseURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Token "+c.Token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		var body struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &body)
		return &APIError{Status: resp.StatusCode, Message: body.Message}
	}
	return json.Unmarshal(data, out)
}
