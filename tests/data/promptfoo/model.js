// An offline "model": answers with a fixed text that depends on its label and the question.
class Model {
  constructor(options) { this.providerId = options.id || 'model'; this.label = options.label; }
  id() { return this.providerId; }
  async callApi(prompt) { return { output: `${this.label} says: ${prompt} ` + 'x'.repeat(prompt.length % 7) }; }
}
module.exports = Model;
