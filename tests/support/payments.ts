// Hand-built x402 payments: they live in servers/src/solana/payment-builder.ts so that bench/ can build them too.
export * from '../../servers/src/solana/payment-builder';
