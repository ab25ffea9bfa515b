#include "metrics/flops.h"

namespace nmt::metrics {

double training_flops(const model::ModelConfig& c, const BatchShape& b) {
  const double d = static_cast<double>(c.d_model), f = static_cast<double>(c.ffn_dim);
  const double s_tok = static_cast<double>(b.src_tokens), t_tok = static_cast<double>(b.tgt_tokens);
  const double n = static_cast<double>(b.sentences), S = static_cast<double>(b.src_len),
               T = static_cast<double>(b.tgt_len);
  // Per layer, forward.
  const double enc_linear = s_tok * 2 * (4 * d * d + 2 * d * f);
  const double enc_attention = n * 2 * (2 * S * S * d);  // scores and weighted sum
  const double dec_linear = t_tok * 2 * (4 * d * d + 2 * d * d + 2 * d * f) + s_tok * 2 * (2 * d * d);  // + memory k/v
  const double dec_attention = n * 2 * (2 * T * T * d + 2 * T * S * d);
  const double output = t_tok * 2 * d * static_cast<double>(c.vocab_size);
  const double forward = static_cast<double>(c.encoder_layers) * (enc_linear + enc_attention) +
                         static_cast<double>(c.decoder_layers) * (dec_linear + dec_attention) + output;
  return 3 * forward;
}

}  // namespace nmt::metrics
