// A client's project calls, written the way teams write them: mostly careful, with two paths that are not. Its
// tests pass against the mock; a fault campaign finds the rest (docs/guide/campaigns.md):
//
//   mockserver campaign --operation createProject --operation listProjects --operation editProject \
//       --fault 'status 503' --fault reset -- node --test test/projects.test.js
//
// - projectNames() reads with retries that honour Retry-After and give up after a few: it survives a 503 and a
//   reset of its read;
// - createProject() retries a 503 properly, but also sends its POST again after a connection error, when the
//   project may have been made already: after a reset it meets the 409 its own first write caused (misbehaved);
// - renameProject() handles no error at all: a 503 fails its test (failed).

const ORG = '8d3e6a4b-1f2c-4b7a-9e1d-3c5f7a9b2d10';
const RETRIES = 4;
const pause = (ms) => new Promise((done) => setTimeout(done, ms));

export class ProjectsClient {
  constructor(baseUrl, token) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.headers = { Authorization: `Token ${token}`, 'Content-Type': 'application/json' };
  }

  async send(method, path, body) {
    const response = await fetch(`${this.baseUrl}${path}`, {
      method, headers: this.headers, body: body ? JSON.stringify(body) : undefined,
    });
    return { status: response.status, headers: response.headers, text: await response.text() };
  }

  /** A request sent again after a 429 or 503 (waiting what Retry-After says) or a connection error, RETRIES at most. */
  async withRetries(method, path, body) {
    for (let attempt = 0; ; attempt += 1) {
      let reply;
      try {
        reply = await this.send(method, path, body);
      } catch (error) {
        if (attempt === RETRIES - 1) throw error;
        await pause(200 * 2 ** attempt);
        continue;
      }
      if ([429, 503].includes(reply.status) && attempt < RETRIES - 1) {
        await pause(1000 * Number(reply.headers.get('retry-after') ?? 1));
        continue;
      }
      if (reply.status >= 400) throw new Error(`${method} ${path}: ${reply.status} ${reply.text}`);
      return JSON.parse(reply.text);
    }
  }

  async projectNames() {
    return new Set((await this.withRetries('GET', `/organization/${ORG}/project`)).results.map((p) => p.name));
  }

  // the path that is not careful: a connection error after the POST left may mean the project was made
  createProject(name) {
    return this.withRetries('POST', `/organization/${ORG}/project`, { name });
  }

  // the other one: no error handled at all
  async renameProject(id, name) {
    const reply = await this.send('PUT', `/project/${id}`, { name });
    if (reply.status >= 400) throw new Error(`rename: ${reply.status} ${reply.text}`);
    return JSON.parse(reply.text);
  }
}
