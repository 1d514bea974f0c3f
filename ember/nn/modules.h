#pragma once
// Every nn module: Module, layers, convolutions, pooling, normalisation, activations, losses,
// attention, recurrent and transformer layers, positional encodings, containers and initialisers.
#include "ember/nn/activation.h"
#include "ember/nn/attention.h"
#include "ember/nn/blocks.h"
#include "ember/nn/container.h"
#include "ember/nn/conv.h"
#include "ember/nn/init.h"
#include "ember/nn/layers.h"
#include "ember/nn/loss.h"
#include "ember/nn/module.h"
#include "ember/nn/norm.h"
#include "ember/nn/pool.h"
#include "ember/nn/positional.h"
#include "ember/nn/rnn.h"
#include "ember/nn/transformer.h"
