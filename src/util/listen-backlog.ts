/**
 * Connections the kernel may hold for accept(): Go's listeners (Nomad's
 * HTTP and RPC ports) ask for the kernel's whole somaxconn, Node's for 511
 * unless told. Thousands of clients reconnecting after a pause overflow 511,
 * and TCP's retries then hold their calls for seconds to a minute. The
 * kernel caps this at its somaxconn (4096 on current Linux).
 */
export const LISTEN_BACKLOG = 4096;
