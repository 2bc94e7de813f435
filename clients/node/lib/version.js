// The client's version is the server's it was written against: the control document's x-constants.version
// (lib/constants.js, generated with package.json's version from mockserver/core/version.py).
import { VERSION } from './constants.js';

export { VERSION };

/** "0.1.0" -> "0.1"; anything unreadable -> the text itself. */
export function majorMinor(version) {
  const match = /^v?(\d+)\.(\d+)/.exec(String(version ?? ''));
  return match ? `${Number(match[1])}.${Number(match[2])}` : String(version);
}

/** The one line printed when the mock's major.minor differs from the client's; null when they agree. */
export function versionMismatch(serverVersion, url, clientVersion = VERSION) {
  if (majorMinor(serverVersion) === majorMinor(clientVersion)) return null;
  return `idp-mockserver client ${clientVersion}: the mock at ${url} is ${serverVersion} (major.minor differ); ` +
    'some calls may not match';
}
