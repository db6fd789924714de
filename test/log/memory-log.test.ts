import { MemoryLog } from "../../src/log/memory-log.ts";
import { eventLogContract } from "./contract.ts";

eventLogContract("memory", () => ({ open: async () => new MemoryLog() }));
