// The code under test: how a client team's service calls the platform, with plain fetch. It knows nothing of
// the mock: base URL and token are parameters, and so is `sleep`, so that tests can wait on the mock's clock.

export class PlatformError extends Error {
  constructor(status, body, what) {
    super(`${what}: the platform answered ${status}${body?.message ? `: ${body.message}` : ''}`);
    this.name = 'PlatformError';
    this.status = status;
    this.body = body;
  }
}

const FINAL_OK = new Set(['DEPLOYED']);
const FINAL_ERROR = /_ERROR$|^CANCELED$/;

export class PlatformClient {
  /**
   * @param {string} baseUrl the platform's API base URL (a sandbox's URL in tests)
   * @param {string} token an API token (sent as `Authorization: Token ...`)
   * @param {{sleep?: (ms: number) => Promise<void>, retries?: number}} options
   */
  constructor(baseUrl, token, { sleep = (ms) => new Promise((done) => setTimeout(done, ms)), retries = 3 } = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.token = token;
    this.sleep = sleep;
    this.retries = retries;
  }

  async request(method, path, body, what = `${method} ${path}`) {
    for (let attempt = 0; ; attempt += 1) {
      const response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers: { Authorization: `Token ${this.token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await response.text();
      const parsed = text ? JSON.parse(text) : null;
      if (response.ok) return parsed;
      // a 502/503/504 is worth another try, after a pause; anything else is the caller's problem
      if ([502, 503, 504].includes(response.status) && attempt < this.retries) {
        await this.sleep(1000 * 2 ** attempt);
        continue;
      }
      throw new PlatformError(response.status, parsed, what);
    }
  }

  createProject(organizationId, name) {
    return this.request('POST', `/organization/${organizationId}/project`, { name }, 'create project');
  }

  async listProjects(organizationId) {
    return (await this.request('GET', `/organization/${organizationId}/project`, null, 'list projects')).results;
  }

  deploy(applicationId) {
    return this.request('POST', `/application/${applicationId}/deploy`, null, 'deploy');
  }

  status(applicationId) {
    return this.request('GET', `/application/${applicationId}/status`, null, 'status');
  }

  /** Deploy and poll the status every `pollMs` until the deployment ends: its final state, or an error for a failure. */
  async deployAndWait(applicationId, { pollMs = 2000, timeoutMs = 600_000 } = {}) {
    await this.deploy(applicationId);
    for (let waited = 0; waited <= timeoutMs; waited += pollMs) {
      await this.sleep(pollMs);
      const { state } = await this.status(applicationId);
      if (FINAL_OK.has(state)) return state;
      if (FINAL_ERROR.test(state)) throw new Error(`deployment of ${applicationId} failed: ${state}`);
    }
    throw new Error(`deployment of ${applicationId} did not end within ${timeoutMs / 1000} s`);
  }
}
