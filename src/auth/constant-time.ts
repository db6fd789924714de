/**
 * Constant-time string equality, for secrets and their hashes: every
 * character is compared whatever the first difference (no early exit, no
 * branch on the characters), without the two buffers timingSafeEqual would
 * need per call. Strings of different lengths differ at once: the secrets
 * compared here (UUIDs, SHA-256 in hex) have one length, so it tells nothing.
 */
export function constantTimeEqual(known: string, presented: string): boolean {
  if (known.length !== presented.length) return false;
  let diff = 0;
  for (let i = 0; i < known.length; i++) diff |= known.charCodeAt(i) ^ presented.charCodeAt(i);
  return diff === 0;
}
