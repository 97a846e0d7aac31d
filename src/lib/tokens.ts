/**
 * Tokens a text costs, estimated without a tokenizer: about four characters per token, the usual
 * rule of thumb for English text with GPT- and Claude-family tokenizers. Used where a provider
 * reports no usage (the local provider) and to keep chat memory within its budget; it
 * overestimates code and underestimates non-Latin scripts, which a budget tolerates.
 */
export const estimateTokens = (text: string): number => Math.ceil(text.length / 4);
