// The few google.rpc messages a client reads from a refused call's trailer
// `grpc-status-details-bin` (a serialized google.rpc.Status), decoded from the protobuf wire
// format by hand: google/rpc/status.proto and google/rpc/error_details.proto (RetryInfo) are
// public and stable, and a mobile client decodes them the same way with its own runtime.

const RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo";

interface Field {
  number: number;
  varint?: bigint;
  bytes?: Uint8Array;
}

function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    let shift = 0n;
    for (;;) {
      if (at >= buf.length) throw new Error("truncated varint");
      const byte = buf[at++] as number;
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7n;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const number = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ number, varint: varint() });
    else if (wire === 2) {
      const length = Number(varint());
      out.push({ number, bytes: buf.subarray(at, at + length) });
      at += length;
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

/** google.rpc.RetryInfo.retry_delay (a google.protobuf.Duration) in milliseconds, if the
 * serialized google.rpc.Status carries a RetryInfo detail; null otherwise. */
export function retryDelayMs(status: Uint8Array): number | null {
  for (const detail of fields(status).filter((f) => f.number === 3 && f.bytes)) {
    const any = fields(detail.bytes as Uint8Array);
    const typeUrl = any.find((f) => f.number === 1)?.bytes;
    const value = any.find((f) => f.number === 2)?.bytes;
    if (!typeUrl || new TextDecoder().decode(typeUrl) !== RETRY_INFO) continue;
    const delay = value ? fields(value).find((f) => f.number === 1)?.bytes : undefined;
    if (!delay) return 0;
    const parts = fields(delay);
    const seconds = Number(parts.find((f) => f.number === 1)?.varint ?? 0n);
    const nanos = Number(parts.find((f) => f.number === 2)?.varint ?? 0n);
    return seconds * 1000 + nanos / 1e6;
  }
  return null;
}
