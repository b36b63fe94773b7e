import { createHash } from 'node:crypto';
import { base58Decode, base58Encode } from '@agent-economy/contracts';
import { signEd25519, verifyEd25519, type Wallet } from '../solana/keys';

// A resource server proves to the facilitator who it is: its /verify and /settle requests carry an Ed25519
// signature, by its wallet, over the method, the route's path (`/settle`, whatever prefix a proxy adds), the
// SHA-256 of the body and a timestamp. The
// facilitator pays the fees of payments to any payTo a registered resource server asks it to settle (a
// marketplace paying its sellers directly); anyone else only gets payments to registered sellers settled.

export const RESOURCE_SERVER_HEADER = 'x-resource-server';
/** How far a signature's timestamp may be from the facilitator's clock. */
export const RESOURCE_AUTH_SKEW_SECONDS = 120;

const message = (method: string, path: string, body: string | Uint8Array, timestamp: number) =>
  new TextEncoder().encode(
    `agent-economy resource-server v1\n${method.toUpperCase()}\n${path}\n${createHash('sha256').update(body).digest('hex')}\n${timestamp}`,
  );

/** The header value for a request: `address=<wallet>;ts=<unix seconds>;sig=<base58 Ed25519 signature>`. */
export function signResourceRequest(
  wallet: Wallet,
  method: string,
  path: string,
  body: string | Uint8Array,
  now = Date.now(),
): string {
  const timestamp = Math.floor(now / 1000);
  const signature = signEd25519(wallet, message(method, path, body, timestamp));
  return `address=${wallet.address};ts=${timestamp};sig=${base58Encode(signature)}`;
}

/** The wallet that signed this request, or why the header does not prove one. */
export function verifyResourceRequest(
  header: string,
  method: string,
  path: string,
  body: string | Uint8Array,
  now = Date.now(),
): { address: string } | { error: string } {
  const fields = Object.fromEntries(
    header.split(';').map((part) => {
      const at = part.indexOf('=');
      return [part.slice(0, at).trim(), part.slice(at + 1).trim()];
    }),
  );
  const { address, ts, sig } = fields as Record<string, string | undefined>;
  const key = address ? base58Decode(address) : undefined;
  const signature = sig ? base58Decode(sig) : undefined;
  if (!key || key.length !== 32 || !signature || signature.length !== 64 || !ts || !/^\d{1,12}$/.test(ts)) {
    return {
      error: `the ${RESOURCE_SERVER_HEADER} header must read address=<wallet>;ts=<unix seconds>;sig=<base58 signature>`,
    };
  }
  const skew = Math.abs(now / 1000 - Number(ts));
  if (skew > RESOURCE_AUTH_SKEW_SECONDS)
    return {
      error: `the ${RESOURCE_SERVER_HEADER} signature is ${Math.round(skew)} s from this facilitator's clock (at most ${RESOURCE_AUTH_SKEW_SECONDS})`,
    };
  if (!verifyEd25519(key, message(method, path, body, Number(ts)), signature)) {
    return {
      error: `the ${RESOURCE_SERVER_HEADER} signature does not match this request (method, path, body, timestamp)`,
    };
  }
  return { address: address! };
}
