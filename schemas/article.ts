/** `word` with its indefinite article: "an agent", "an open mesh", "a reader". By spelling: a vowel letter takes "an". */
export function withArticle(word: string): string {
  return `${/^[aeiou]/i.test(word) ? "an" : "a"} ${word}`;
}
