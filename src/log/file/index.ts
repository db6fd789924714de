export type { ReadObserver } from "./chunked-file.ts";
export { FileLog, openFileLog } from "./file-log.ts";
export type { LogProblem } from "./inspect.ts";
export type { FileLogOptions, WarnLogger } from "./options.ts";
export { openFileLogReadOnly, ReadOnlyFileLog, type ReadOnlyFileLogOptions } from "./read-only-file-log.ts";
export { type RepairReport, repairFileLog } from "./repair.ts";
export { type VerifiedSegment, type VerifyReport, verifyFileLog } from "./verify.ts";
