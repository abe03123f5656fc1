// An offline grader: returns the JSON an llm-rubric grader returns; its score depends on its label and the output.
class Grader {
  constructor(options) { this.providerId = options.id || 'grader'; this.label = options.label; this.bias = (options.config || {}).bias || 0; }
  id() { return this.providerId; }
  async callApi(prompt) {
    const n = prompt.length % 5;
    const score = Math.min(1, Math.max(0, 0.3 + 0.1 * n + this.bias));
    return { output: JSON.stringify({ pass: score >= 0.5, score: score, reason: 'offline grader' }) };
  }
}
module.exports = Grader;
