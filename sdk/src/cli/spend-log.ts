import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { PaymentReceipt, SentPayment, SpendRecord } from '../index';

// The command and its MCP server keep the SDK's spend log in a file (fileSpendStore): budgets count what
// earlier runs spent, and `agent-economy spend` lists its receipts.

/** AGENT_ECONOMY_SPEND_LOG, else ~/.agent-economy/spend.jsonl. */
export function spendLogPath(env: NodeJS.ProcessEnv = process.env): string {
  return env.AGENT_ECONOMY_SPEND_LOG || join(homedir(), '.agent-economy', 'spend.jsonl');
}

/**
 * The spend log's receipts (oldest first) and the payments sent with no outcome recorded, read without
 * taking its lock, so that `spend` works while an MCP server holds it. Torn or foreign lines are skipped.
 */
export function readSpendLog(path: string): { receipts: PaymentReceipt[]; pending: SentPayment[] } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return { receipts: [], pending: [] };
    throw error;
  }
  const receipts: PaymentReceipt[] = [];
  const sent = new Map<string, SentPayment>();
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let record: SpendRecord;
    try {
      record = JSON.parse(line) as SpendRecord;
    } catch {
      continue;
    }
    if (record?.type === 'sent') sent.set(record.id, record.payment);
    else if (record?.type === 'receipt' && /^\d+$/.test(String(record.receipt?.amount))) {
      sent.delete(record.id);
      receipts.push(record.receipt);
    } else if (record?.type === 'release') sent.delete(record.id);
  }
  return { receipts, pending: [...sent.values()] };
}
